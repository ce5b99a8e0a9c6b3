from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from judge.engine import judge
from judge.kinds import kind_for, preload_for
from judge.package import Package, load_package
from judge.sandbox import BwrapConfig, BwrapSandbox, SandboxPool, xla_cache
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


# A limit short enough that a time-out (the CPU limit, or the wall guard at WALL_GUARD times
# it, each met twice) costs about a second rather than a dozen, long enough for `double`'s
# correct code many times over.
QUICK_TIME_MS = 300


def with_time_limit(root: Path, time_ms: int) -> Package:
    """The package at `root` (a copy), its time limit set to `time_ms`."""
    manifest = root / "problem.toml"
    text = manifest.read_text()
    limit = re.search(r"^time_ms = \d+$", text, re.MULTILINE)
    assert limit is not None, "no time limit to set"
    manifest.write_text(text.replace(limit.group(0), f"time_ms = {time_ms}"))
    package = load_package(root)
    assert package.manifest.limits.time_ms == time_ms
    return package


@pytest.fixture(scope="session")
def double_quick(tmp_path_factory: pytest.TempPathFactory) -> Package:
    """The double fixture with a short time limit, for tests whose point is a time-out."""
    root = tmp_path_factory.mktemp("problems") / "double"
    shutil.copytree(FIXTURES / "double", root)
    return with_time_limit(root, QUICK_TIME_MS)


@pytest.fixture
def run(sandbox: BwrapSandbox, double: Package):
    def _run(code: str, samples_only: bool = False) -> JudgeResult:
        return judge(double, code, sandbox, samples_only=samples_only)

    return _run


def _double_many(root: Path) -> Path:
    """A copy of the double fixture at `root` with eight tests (splitting starts at six)."""
    shutil.copytree(FIXTURES / "double", root)
    shapes = [(2, 4), (3, 5), (4, 6), (5, 7), (6, 2)]
    with (root / "problem.toml").open("a") as f:
        for k, (n, m) in enumerate(shapes):
            f.write(f'\n[[tests]]\nname = "more-{k}"\nkind = "hidden"\nseed = {10 + k}\n'
                    f"params = {{ n = {n}, m = {m} }}\n")
    return root


@pytest.fixture(scope="module")
def double_many(tmp_path_factory: pytest.TempPathFactory) -> Package:
    """The double fixture with eight tests (splitting starts at six)."""
    return load_package(_double_many(tmp_path_factory.mktemp("problems") / "double"))


@pytest.fixture(scope="module")
def double_many_quick(tmp_path_factory: pytest.TempPathFactory) -> Package:
    """double_many with a short time limit, for tests whose point is a time-out (a sandbox of
    the same kind: the pool's spares serve it too)."""
    root = _double_many(tmp_path_factory.mktemp("problems") / "double")
    return with_time_limit(root, QUICK_TIME_MS)


@pytest.fixture
def pool(sandbox: BwrapSandbox, double_many: Package):
    p = SandboxPool(sandbox, per_key=2, max_idle=4)
    p.prewarm(kind_for(double_many, preload_for(["numpy"])), 512 << 20)
    yield p
    p.close()
