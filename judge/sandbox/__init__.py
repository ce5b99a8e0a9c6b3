"""Sandboxes that run one submission each, then are gone."""

from __future__ import annotations

from pathlib import Path

from judge.sandbox.bwrap import BwrapConfig, BwrapSandbox, SandboxUnavailable
from judge.sandbox.pool import SandboxPool

__all__ = ["BwrapConfig", "BwrapSandbox", "SandboxPool", "SandboxUnavailable", "make_sandbox"]


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
) -> BwrapSandbox | SandboxPool:
    """The configured sandbox: fresh per submission, or drawn from a pool of prepared ones
    (`pool_per_key` > 0; with `pool_split`, an idle pool judges a Submit in two sandboxes at
    once). With `compile_cache`, a judge-filled JAX compilation cache is shared
    read-only by every sandbox. `bwrap`: the bubblewrap binary (a name on PATH or a path);
    SandboxUnavailable when it is missing, so a worker fails at start-up, not per job.
    `fork_server`: start sandboxes by forking a process that imported the libraries once,
    where that is as safe as bubblewrap (root and cgroups)."""
    if kind not in ("bwrap", "local", ""):
        raise SandboxUnavailable(f"unknown sandbox kind {kind!r} (known: bwrap)")
    config = BwrapConfig(bwrap=bwrap or "bwrap", fork_server=fork_server)
    if compile_cache:
        from judge.sandbox import xla_cache

        config.xla_cache_dir = xla_cache.ensure_dir(cache_root or xla_cache.default_root())
    sandbox = BwrapSandbox(config)
    if pool_per_key > 0:
        return SandboxPool(sandbox, per_key=pool_per_key, max_idle=max(pool_max_idle, 1),
                           max_idle_bytes=pool_max_idle_mb << 20, split_idle=pool_split)
    return sandbox
