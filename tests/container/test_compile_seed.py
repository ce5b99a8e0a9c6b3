"""The sandbox image's seed of the compilation cache, on a real engine: a new cache volume gets
it, the seed holds what a judge's own fill writes (the keys made at build time are those of
a worker's sandboxes), and a machine with another CPU gets nothing of it."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from judge.kinds import kinds_for
from judge.package import load_package
from judge.sandbox import xla_cache
from judge.sandbox.base import XLA_CACHE_IN_SANDBOX
from judge.sandbox.container import ContainerConfig, ContainerSandbox, seed
from judge.sandbox.container.seed import SEED_COPY_SOURCE, SEED_IN_IMAGE
from judge.sandbox.job import Kind
from tests import docker_engine
from tests.conftest import REPO

pytestmark = [pytest.mark.sandbox, pytest.mark.container]
IMAGE = "tensorjudge-sandbox:latest"


@pytest.fixture(scope="module")
def client() -> docker.DockerClient:
    docker_engine.images()
    return docker.from_env()


@pytest.fixture
def volume(client: docker.DockerClient) -> Iterator[str]:
    name = f"tjtest-xla-{secrets.token_hex(4)}"
    yield name
    client.api.remove_volume(name, force=True)


def _files(client: docker.DockerClient, volume: str) -> set[str]:
    out = client.containers.run(IMAGE, ["ls", "-A", XLA_CACHE_IN_SANDBOX], remove=True,
                                network_mode="none",
                                volumes={volume: {"bind": XLA_CACHE_IN_SANDBOX, "mode": "ro"}})
    return set(out.decode().split())


def _until_unused(client: docker.DockerClient, volume: str) -> None:
    """The engine removes destroyed sandboxes' containers asynchronously."""
    import time

    deadline = time.monotonic() + 60
    while client.api.containers(all=True, filters={"volume": volume}) and \
            time.monotonic() < deadline:
        time.sleep(0.2)


def _seed_manifest(client: docker.DockerClient) -> dict:
    out = client.containers.run(IMAGE, ["cat", f"{SEED_IN_IMAGE}/seed.json"], remove=True,
                                network_mode="none")
    return json.loads(out)


def test_a_new_cache_volume_starts_with_the_image_seed(client, volume):
    manifest = _seed_manifest(client)
    assert manifest["kinds"], manifest
    backend = ContainerSandbox(ContainerConfig(image=IMAGE, cache_volume=volume))
    try:
        assert sorted(backend.seeded) == sorted(manifest["kinds"])
        files = _files(client, volume)
        assert len(files) > 100
        assert not [f for f in files if ".seeding" in f]
        # The bundled problems' JAX kinds are filled already: nothing to compile at start-up.
        package = load_package(REPO / "problems" / "encoder-block")
        jax_kinds = [k for k in kinds_for(package) if k.uses_jax and k.warmup is not None]
        assert jax_kinds and all(k.key in manifest["kinds"] for k in jax_kinds)
        assert all(backend._filled.holds(k) for k in jax_kinds)
    finally:
        backend.close()


def test_only_a_warm_up_waits_for_the_seed(client, volume):
    """The copy runs beside the judge's first sandboxes: one that imports without a warm-up
    starts while the seed is still being copied; one that runs a warm-up waits for it."""
    import threading

    package = load_package(REPO / "problems" / "decoder-block")
    warm = next(k for k in kinds_for(package) if xla_cache.needs_fill(k))
    backend = ContainerSandbox(ContainerConfig(image=IMAGE, cache_volume=volume))
    release = threading.Event()
    started = []
    try:
        assert backend.seeded  # the real copy, done
        backend.seeding = seed.Seeding(lambda: [] if release.wait(120) else [])  # a slow one
        plain = backend.spawn(Kind(("jax",)), 1 << 30)
        started.append(plain)
        waiting = threading.Thread(
            target=lambda: started.append(backend.spawn(warm, 2 << 30)), daemon=True)
        waiting.start()
        waiting.join(3.0)
        assert waiting.is_alive(), "a warm-up started before the seed was copied"
        release.set()
        waiting.join(60)
        assert len(started) == 2
    finally:
        release.set()
        for sp in started:
            sp.destroy()
        backend.close()
        _until_unused(client, volume)


@pytest.mark.slow
def test_judges_starting_together_seed_one_new_volume_at_once(client, volume):
    """The workers of a deployment start at the same moment: each seeds the new volume, and
    none fails for the other's copies."""
    from concurrent.futures import ThreadPoolExecutor

    manifest = _seed_manifest(client)

    def judge() -> ContainerSandbox:
        return ContainerSandbox(ContainerConfig(image=IMAGE, cache_volume=volume))

    with ThreadPoolExecutor(3) as ex:
        backends = list(ex.map(lambda _: judge(), range(3)))
    try:
        for backend in backends:
            assert sorted(backend.seeded) == sorted(manifest["kinds"])
        files = _files(client, volume)
        assert len(files) > 100
        assert not [f for f in files if ".seeding" in f]
    finally:
        for backend in backends:
            backend.close()


def test_the_seed_holds_what_a_judge_fills(client, volume):
    """A kind filled here, in an empty volume, writes only entries the seed has: the image
    was seeded under the keys a worker's sandboxes look up."""
    package = load_package(REPO / "problems" / "decoder-block")
    kind = next(k for k in kinds_for(package)
                if k.uses_jax and k.warmup is not None and not k.eager_jax)
    backend = ContainerSandbox(ContainerConfig(image=IMAGE, cache_volume=volume))
    try:
        assert kind.key in backend.seeded  # once the copy is done
        seeded = _files(client, volume)
        # Emptied, and forgotten as filled: the fill below compiles the warm-up itself.
        client.containers.run(IMAGE, ["sh", "-c", f"rm -rf {XLA_CACHE_IN_SANDBOX}/*"],
                              remove=True, network_mode="none", user="65534:65534",
                              volumes={volume: {"bind": XLA_CACHE_IN_SANDBOX, "mode": "rw"}})
        assert _files(client, volume) == set()
        backend._filled = xla_cache.FilledThisProcess()
        assert backend.fill_compile_cache(kind, package.manifest.limits.memory_mb << 20)
        filled = _files(client, volume)
    finally:
        backend.close()
    assert filled, "the fill compiled nothing"
    assert filled <= seeded, sorted(filled - seeded)[:5]


def test_nothing_is_copied_on_another_cpu(client, volume, tmp_path: Path):
    seed = tmp_path / "seed"
    (seed / "cache").mkdir(parents=True)
    (seed / "cache" / "jit_f-0123-cache").write_bytes(b"not for this CPU")
    (seed / "seed.json").write_text(json.dumps({"cpu": "another", "kinds": ["k"]}))
    for p in (tmp_path, seed, seed / "cache"):
        p.chmod(0o755)
    for p in (seed / "seed.json", seed / "cache" / "jit_f-0123-cache"):
        p.chmod(0o644)
    client.api.create_volume(volume)
    out = client.containers.run(
        IMAGE, ["/usr/bin/python3.11", "-I", "-S", "-c", SEED_COPY_SOURCE, "/seed",
                XLA_CACHE_IN_SANDBOX],
        remove=True, network_mode="none", user="65534:65534",
        volumes={str(seed): {"bind": "/seed", "mode": "ro"},
                 volume: {"bind": XLA_CACHE_IN_SANDBOX, "mode": "rw"}})
    report = json.loads(out.decode().strip().splitlines()[-1])
    assert report["kinds"] == [] and report["copied"] == 0 and "CPU" in report["skipped"]
    assert _files(client, volume) == set()
