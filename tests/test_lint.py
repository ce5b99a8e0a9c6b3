"""The code keeps to the project's own lint and type settings (pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    res = _run("ruff", "check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_app_and_the_engine_type_check(tmp_path) -> None:
    res = _run("mypy", "--cache-dir", str(tmp_path), "app", "judge")
    assert res.returncode == 0, res.stdout + res.stderr
