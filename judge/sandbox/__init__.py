"""Sandboxes that run one submission each, then are gone."""

from __future__ import annotations

import os
from pathlib import Path

from judge.sandbox.base import Backend, SandboxUnavailable
from judge.sandbox.bwrap import BwrapConfig, BwrapSandbox
from judge.sandbox.config import KINDS, SandboxConfig
from judge.sandbox.pool import PoolFigures, SandboxPool

__all__ = ["Backend", "BwrapConfig", "BwrapSandbox", "PoolFigures", "SandboxConfig", "SandboxPool",
           "SandboxUnavailable", "open_sandbox", "KINDS"]


def open_sandbox(config: SandboxConfig, *, pooled: bool = False) -> SandboxPool:
    """The configured sandbox, as a pool over its backend: `pooled` (workers), with the
    prepared sandboxes the config keeps ready (`pool_per_key`); otherwise with none, so that
    each judgement starts a fresh sandbox (one-off commands, validation).
    SandboxUnavailable when the backend cannot run here (the bubblewrap binary missing, the
    docker engine unreachable), so a worker fails at start-up, not per job."""
    sandbox: Backend
    extra_spares = 0  # kept ready per kind beyond the config's, where the backend wants them
    if config.kind == "docker":
        from judge.sandbox import xla_cache
        from judge.sandbox.container import ContainerConfig, ContainerSandbox

        # The record of the volume's filled kinds: beside the trusted outputs, which the
        # workers of a deployment share (judge/trusted/expected.py's folder).
        shared = os.environ.get("TENSORJUDGE_CACHE_DIR")
        cconfig = ContainerConfig(docker_host=config.docker_host or None,
                                  compile_cache=config.compile_cache,
                                  cache_volume=config.docker_cache_volume,
                                  library_patches=config.library_patches,
                                  fill_record_root=(Path(shared) if shared else
                                                    config.cache_root or xla_cache.default_root()))
        if config.docker_image:
            cconfig.image = config.docker_image
        sandbox = ContainerSandbox(cconfig)
        extra_spares = ContainerSandbox.extra_spares
    elif config.kind in ("bwrap", "local", ""):
        bconfig = BwrapConfig(bwrap=config.bwrap or "bwrap", fork_server=config.fork_server,
                              fork_warmed=config.fork_warmed,
                              library_patches=config.library_patches)
        if config.compile_cache:
            from judge.sandbox import xla_cache

            bconfig.xla_cache_dir = xla_cache.ensure_dir(config.cache_root
                                                         or xla_cache.default_root())
        sandbox = BwrapSandbox(bconfig)
    else:
        raise SandboxUnavailable(f"unknown sandbox kind {config.kind!r} "
                                 f"(known: {', '.join(KINDS)})")
    spares = max(config.pool_per_key, 0) if pooled else 0
    if spares:
        spares += extra_spares
    return SandboxPool(sandbox, per_key=spares,
                       max_idle=max(config.pool_max_idle, 1),
                       max_idle_bytes=config.pool_max_idle_mb << 20,
                       split_idle=config.pool_split,
                       split_reserve=extra_spares if spares else 0)
