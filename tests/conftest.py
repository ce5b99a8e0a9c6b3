"""Shared fixtures: the real sandbox and the small fixture problems."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "problems"
REPO = Path(__file__).resolve().parents[1]

# Every worker pool a test starts (and every `serve` it runs) would otherwise import JAX, Flax
# and PyTorch in fork servers of its own at once; tests/judge/test_startup.py shows it works.
os.environ.setdefault("TENSORJUDGE_IMPORT_AHEAD", "false")


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # Trusted outputs (expected, known mistakes', mutants') go to a throwaway cache, shared by
    # the tests of the run (all its worker processes: one computes what the others then
    # read, as a deployment's workers do). It starts with the developer's (what `./dev setup`
    # computed): each output's key holds a hash of the trusted code that made it
    # (judge/trusted/code.py), so only those this code would make are ever read. Tests whose
    # point is computing them use a cache of their own. The trusted processes' compilation
    # cache is the developer's: executables are keyed by their program, so reuse changes no
    # result.
    if "TENSORJUDGE_CACHE_DIR" not in os.environ:
        from judge.cache_links import link_outputs
        from judge.trusted.expected import cache_dir

        developer = cache_dir()
        os.environ.setdefault("TENSORJUDGE_TRUSTED_COMPILE_CACHE",
                              str(developer.parent / "xla-trusted"))
        run = tmp_path_factory.getbasetemp()
        if os.environ.get("PYTEST_XDIST_WORKER"):
            run = run.parent  # the run's folder, above each worker's own
        private = run / "trusted-cache"
        with open(run / "trusted-cache.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (run / "trusted-cache.linked").exists():
                link_outputs(developer, private / "expected")
                (run / "trusted-cache.linked").touch()
        os.environ["TENSORJUDGE_CACHE_DIR"] = str(private)


# Before xdist's own hook, which reads the groups (it is registered after this file: the
# groups given later were never seen, and a module's tests ran on both workers at once).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each module's tests run on one worker (its module fixtures are made once), and all the
    container tests on one, last, while their images build from the start of the session:
    they share one engine, and some of them count what is left on it."""
    for item in items:
        group = "container" if item.get_closest_marker("container") else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
    container = [item for item in items if item.get_closest_marker("container")]
    if not container:
        return
    items[:] = [item for item in items if not item.get_closest_marker("container")] + container
    if not config.option.collectonly:
        from tests import docker_engine

        docker_engine.build_in_background()
