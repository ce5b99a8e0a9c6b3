"""Shared fixtures: the real sandbox and the small fixture problems."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "problems"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Trusted outputs (expected, known mistakes', mutants') go to a throwaway cache: each run
    # computes them with the judge as it is; within the run, every test reads them from it.
    # The trusted processes' compilation cache is the developer's (what
    # `./dev setup` filled): executables are keyed by their program, so reuse changes no result.
    if "TENSORJUDGE_CACHE_DIR" not in os.environ:
        from judge.trusted.expected import cache_dir

        os.environ.setdefault("TENSORJUDGE_TRUSTED_COMPILE_CACHE",
                              str(cache_dir().parent / "xla-trusted"))
    os.environ.setdefault("TENSORJUDGE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Container tests run last, while their images build from the start of the session."""
    container = [item for item in items if item.get_closest_marker("container")]
    if not container:
        return
    items[:] = [item for item in items if not item.get_closest_marker("container")] + container
    if not config.option.collectonly:
        from tests import docker_engine

        docker_engine.build_in_background()
