"""A real Docker engine and the project's images, for the tests that need them: started and
built once per test session (`scripts/docker-engine`, `scripts/images`, the engine's build
cache making a rebuild of unchanged sources take seconds)."""

from __future__ import annotations

import functools
import subprocess
import sys
from typing import Any

from tests.conftest import REPO

DOCKER = "/usr/bin/docker"
SANDBOX_LABEL = "org.tensorjudge.sandbox"


@functools.cache
def images() -> None:
    """The engine runs and the images are built from this checkout (a failure fails the
    test that asked: these tests never skip)."""
    for cmd in (["scripts/docker-engine"], ["scripts/images", sys.executable]):
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n"
                               f"{done.stderr[-3000:]}")


def client() -> Any:
    import docker

    images()
    return docker.DockerClient.from_env()


def sandbox_containers(owner: str | None = None) -> list[dict[str, Any]]:
    """Sandbox containers on the engine (of one judge, with `owner`), any state, as the
    engine lists them (one call: a container removed meanwhile is simply not there)."""
    label = SANDBOX_LABEL if owner is None else f"{SANDBOX_LABEL}={owner}"
    return list(client().api.containers(all=True, filters={"label": label}))
