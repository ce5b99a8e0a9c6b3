from __future__ import annotations

import pytest

from judge.engine import judge
from judge.package import Package, load_package
from judge.sandbox import BwrapSandbox
from judge.verdicts import JudgeResult
from tests.conftest import FIXTURES


@pytest.fixture(scope="session")
def sandbox() -> BwrapSandbox:
    return BwrapSandbox()


@pytest.fixture(scope="session")
def double() -> Package:
    return load_package(FIXTURES / "double")


@pytest.fixture
def run(sandbox: BwrapSandbox, double: Package):
    def _run(code: str, samples_only: bool = False) -> JudgeResult:
        return judge(double, code, sandbox, samples_only=samples_only)

    return _run
