"""The judge-filled JAX compilation cache, shared read-only by every sandbox.

The judge fills it by running only its own warm-ups in a sandbox whose cache bind is writable
(no user code ever runs there), so the cache keys match those of the real sandboxes exactly.
Later sandboxes load those executables instead of compiling them: a prepared sandbox is ready
in a fraction of the time, and so is a fresh one's first call.
"""

from __future__ import annotations

import logging
import os
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

from judge.sandbox.pool import pool_key

log = logging.getLogger("tensorjudge.xla_cache")

FILL_UID_OFFSET = -1  # uid_base + this: the one uid allowed to write the cache


def default_root() -> Path:
    """Somewhere every sandbox uid can reach: a system folder when the judge runs as root
    (home folders are often closed to other uids)."""
    if os.geteuid() == 0:
        return Path("/var/cache/tensorjudge")
    import platformdirs

    return Path(platformdirs.user_cache_dir("tensorjudge"))


def cache_dir_for(root: Path) -> Path:
    """One cache per JAX version: executables are not portable across versions."""
    version = metadata.version("jaxlib")
    return root / "xla" / f"jaxlib-{version}"


def _marker(cache: Path, header: dict) -> Path:
    return cache / f".filled-{pool_key(header)}"


def is_filled(sandbox: Any, header: dict) -> bool:
    cache = sandbox.xla_cache_dir
    return cache is None or _marker(cache, header).exists() or not uses_jax(header)


def uses_jax(header: dict) -> bool:
    return "jax" in header.get("preload", []) and bool(header.get("warmup"))


def fill(sandbox: Any, header: dict, memory_bytes: int, timeout_s: float = 300) -> bool:
    """Run the warm-up of `header` in a bubblewrap sandbox (judge/sandbox/bwrap.py) with the
    cache writable; True when the cache holds it."""
    cache = sandbox.xla_cache_dir
    if cache is None or not uses_jax(header):
        return True
    marker = _marker(cache, header)
    if marker.exists():
        return True
    fill_uid = sandbox.config.uid_base + FILL_UID_OFFSET
    if os.geteuid() == 0:
        for d, _dirs, files in os.walk(cache):
            os.chown(d, fill_uid, fill_uid)
            for f in files:
                os.chown(Path(d) / f, fill_uid, fill_uid)
    prepare = {"preload": header.get("preload", []), "warmup": header.get("warmup")}
    # Niced: no job waits for a fill (one that finds the cache empty compiles for itself).
    sp = sandbox.spawn(prepare, memory_bytes, background=True, cache_writable=True, uid=fill_uid)
    try:
        ok = sandbox.wait_warm(sp, timeout_s)
        warm: dict = next((f.header for f in sp.reader.frames if f.ev == "warm"), {})
        if warm.get("warmup_error"):
            log.warning("warm-up failed while filling the cache:\n%s", warm["warmup_error"])
            ok = False
    finally:
        sp.destroy()
    if ok:
        marker.touch()
    return ok


def ensure_dir(root: Path) -> Path:
    cache = cache_dir_for(root)
    cache.mkdir(parents=True, exist_ok=True)
    # The sandboxes' uids only read it: it must be reachable, never writable, for them.
    for p in [cache, *cache.parents][:3]:
        try:
            p.chmod((p.stat().st_mode | 0o755) & ~0o022)
        except PermissionError:
            break
    return cache


def clear(root: Path) -> None:
    shutil.rmtree(root / "xla", ignore_errors=True)
