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
    pool_max_idle: int = 4,
    compile_cache: bool = True,
    cache_root: Path | None = None,
) -> BwrapSandbox | SandboxPool:
    """The configured sandbox: fresh per submission, or drawn from a pool of prepared ones
    (`pool_per_key` > 0). With `compile_cache`, a judge-filled JAX compilation cache is shared
    read-only by every sandbox."""
    if kind not in ("bwrap", "local", ""):
        raise SandboxUnavailable(f"unknown sandbox kind {kind!r} (known: bwrap)")
    config = BwrapConfig()
    if compile_cache:
        from judge.sandbox import xla_cache

        config.xla_cache_dir = xla_cache.ensure_dir(cache_root or xla_cache.default_root())
    sandbox = BwrapSandbox(config)
    if pool_per_key > 0:
        return SandboxPool(sandbox, per_key=pool_per_key, max_idle=max(pool_max_idle, 1))
    return sandbox
