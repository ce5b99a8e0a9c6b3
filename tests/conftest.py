"""Shared fixtures: the real sandbox and the small fixture problems."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "problems"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Expected outputs of the fixture problems go to a throwaway cache, but the bundled
    # problems' cache (slow to fill) is shared with the developer's.
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
