"""Sandboxes that run one submission each, then are gone."""

from __future__ import annotations

from pathlib import Path

from judge.sandbox.base import Backend, SandboxUnavailable
from judge.sandbox.bwrap import BwrapConfig, BwrapSandbox
from judge.sandbox.pool import SandboxPool

__all__ = ["Backend", "BwrapConfig", "BwrapSandbox", "SandboxPool", "SandboxUnavailable",
           "make_sandbox", "KINDS"]
KINDS = ("bwrap", "docker")


def make_sandbox(
    kind: str = "bwrap",
    *,
    pool_per_key: int = 0,
    pool_max_idle: int = 6,
    pool_max_idle_mb: int = 2048,
    pool_split: bool = True,
    compile_cache: bool = True,
    cache_root: Path | None = None,
    bwrap: str = "bwrap",
    fork_server: bool = True,
    fork_warmed: bool = True,
    docker_host: str | None = None,
    docker_image: str | None = None,
    docker_cache_volume: str = "",
) -> Backend | SandboxPool:
    """The configured sandbox: fresh per submission, or drawn from a pool of prepared ones
    (`pool_per_key` > 0; with `pool_split`, an idle pool judges a Submit in two sandboxes at
    once). With `compile_cache`, a judge-filled JAX compilation cache is shared
    read-only by every sandbox. `bwrap`: the bubblewrap binary (a name on PATH or a path);
    SandboxUnavailable when it is missing, so a worker fails at start-up, not per job.
    `fork_server`: start sandboxes by forking a process that imported the libraries once,
    where that is as safe as bubblewrap (root and cgroups); `fork_warmed`: for the kinds
    whose warm-up runs JAX, from one that has run the warm-up as well.
    kind `docker`: a container per submission through the engine at `docker_host` (None:
    DOCKER_HOST or the default socket), from the sandbox image `docker_image`; its
    compilation cache is the engine's volume `docker_cache_volume` (empty: named after the
    image)."""
    sandbox: Backend
    if kind == "docker":
        from judge.sandbox.container import ContainerConfig, ContainerSandbox

        cconfig = ContainerConfig(docker_host=docker_host or None, compile_cache=compile_cache,
                                  cache_volume=docker_cache_volume)
        if docker_image:
            cconfig.image = docker_image
        sandbox = ContainerSandbox(cconfig)
    elif kind in ("bwrap", "local", ""):
        config = BwrapConfig(bwrap=bwrap or "bwrap", fork_server=fork_server,
                             fork_warmed=fork_warmed)
        if compile_cache:
            from judge.sandbox import xla_cache

            config.xla_cache_dir = xla_cache.ensure_dir(cache_root or xla_cache.default_root())
        sandbox = BwrapSandbox(config)
    else:
        raise SandboxUnavailable(f"unknown sandbox kind {kind!r} (known: {', '.join(KINDS)})")
    if pool_per_key > 0:
        return SandboxPool(sandbox, per_key=pool_per_key, max_idle=max(pool_max_idle, 1),
                           max_idle_bytes=pool_max_idle_mb << 20, split_idle=pool_split)
    return sandbox
