from __future__ import annotations

import os

import pytest

from judge.engine import judge
from judge.package import Package, load_package
from judge.sandbox import BwrapConfig, BwrapSandbox, xla_cache
from judge.verdicts import JudgeResult
from tests.conftest import FIXTURES


def forked_sandbox() -> BwrapSandbox:
    """A sandbox host that forks its sandboxes from a fork server. Where the fork server
    should run (root with cgroups) not having one is a failure; elsewhere the test skips."""
    sb = BwrapSandbox(BwrapConfig(fork_server=True))
    if sb.fork_servers is None:
        if os.geteuid() == 0 and sb.cgroups is not None and sb.cgroups.available:
            pytest.fail("root with cgroups, yet no fork server")
        pytest.skip("the fork server needs root and cgroups")
    return sb


@pytest.fixture(scope="session")
def sandbox() -> BwrapSandbox:
    """A fresh sandbox per judgement, with the judge's compilation cache as the judge has it
    (`tensorjudge judge`): a problem's warm-up loads what an earlier fill compiled."""
    cache = xla_cache.ensure_dir(xla_cache.default_root())
    return BwrapSandbox(BwrapConfig(xla_cache_dir=cache))


@pytest.fixture(scope="session")
def double() -> Package:
    return load_package(FIXTURES / "double")


@pytest.fixture
def run(sandbox: BwrapSandbox, double: Package):
    def _run(code: str, samples_only: bool = False) -> JudgeResult:
        return judge(double, code, sandbox, samples_only=samples_only)

    return _run
