"""A real Docker engine and the project's images, for the tests that need them: started and
built once per test session (`scripts/docker-engine`, `scripts/images`, the engine's build
cache making a rebuild of unchanged sources take seconds). The build starts in the background
as soon as a container test is collected (tests/conftest.py runs those last), so on a fresh
machine it overlaps the rest of the suite instead of adding to it. Each worker process of a
run (pytest-xdist) starts it; they take turns on a lock, and the first to build tells the
others of the same run, which then build nothing."""

from __future__ import annotations

import atexit
import fcntl
import os
import subprocess
import sys
import threading
from typing import Any

from tests.conftest import REPO

DOCKER = "/usr/bin/docker"
SANDBOX_LABEL = "org.tensorjudge.sandbox"
# The run this process belongs to (one id for all of pytest-xdist's workers; none without),
# and where the first of them to build the images writes it.
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
BUILT = REPO / ".build" / "images-built-by-run"


class _Build:
    """The engine and the images, made by one thread; the tests wait for its outcome."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: str | None = None
        self.proc: subprocess.Popen[str] | None = None
        self.thread = threading.Thread(target=self._run, name="tj-images", daemon=True)
        self.thread.start()
        atexit.register(self.stop)

    def _run(self) -> None:
        try:
            BUILT.parent.mkdir(parents=True, exist_ok=True)
            with open(BUILT.parent / "images.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if RUN and BUILT.exists() and BUILT.read_text() == RUN:
                    return  # another worker of this run built them
                self._build()
                if RUN and self.error is None:
                    BUILT.write_text(RUN)
        except Exception as e:  # noqa: BLE001 - told to every test that waits
            self.error = f"building the images failed: {e!r}"
        finally:
            self.proc = None
            self.done.set()

    def _build(self) -> None:
        for cmd in (["scripts/docker-engine"], ["scripts/images", sys.executable]):
            self.proc = subprocess.Popen(cmd, cwd=REPO, text=True, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT)
            out, _ = self.proc.communicate(timeout=1800)
            if self.proc.returncode != 0:
                self.error = f"{' '.join(cmd)} failed:\n{out[-6000:]}"
                return

    def stop(self) -> None:
        """A session that ends first (a failure with -x) leaves no build running."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()


_build: _Build | None = None
_lock = threading.Lock()


def build_in_background() -> None:
    global _build
    with _lock:
        if _build is None:
            _build = _Build()


def images() -> None:
    """The engine runs and the images are built from this checkout (a failure fails the
    test that asked: these tests never skip)."""
    build_in_background()
    assert _build is not None
    _build.done.wait()
    if _build.error is not None:
        raise RuntimeError(_build.error)


def client() -> Any:
    import docker

    images()
    return docker.DockerClient.from_env()


def sandbox_containers(owner: str | None = None) -> list[dict[str, Any]]:
    """Sandbox containers on the engine (of one judge, with `owner`), any state, as the
    engine lists them (one call: a container removed meanwhile is simply not there)."""
    label = SANDBOX_LABEL if owner is None else f"{SANDBOX_LABEL}={owner}"
    return list(client().api.containers(all=True, filters={"label": label}))
