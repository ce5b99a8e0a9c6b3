"""The judge-filled JAX compilation cache, shared read-only by every sandbox.

The judge fills it by running only its own warm-ups in a sandbox whose cache is writable (no
user code ever runs there), so the cache keys match those of the real sandboxes exactly.
Later sandboxes load those executables instead of compiling them: a prepared sandbox is ready
in a fraction of the time, and so is a fresh one's first call. Where the cache lives is the
backend's (a host folder for bubblewrap, an engine volume for containers); filling it is the
same for both (`fill`). Judges that share a cache (the workers of a deployment) also share the
record of what it holds and a lock per kind: one fills, the others wait for it and then read.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Protocol

from judge.sandbox.base import Started, wait_warm
from judge.sandbox.job import Kind

log = logging.getLogger("tensorjudge.xla_cache")


class FillRecord(Protocol):
    """Which kinds' warm-ups a backend's cache holds."""

    def holds(self, kind: Kind) -> bool: ...
    def add(self, kind: Kind) -> None: ...
    def lock(self, kind: Kind) -> contextlib.AbstractContextManager[None]: ...


class MarkerFiles:
    """A marker file per filled kind, in the cache folder itself: it lasts as long as the
    cache does, across judge processes."""

    def __init__(self, cache: Path):
        self.cache = cache

    @contextlib.contextmanager
    def lock(self, kind: Kind) -> Iterator[None]:
        """Held while `kind` is filled: by one process of those sharing the folder at a
        time (an open file's lock: a process that dies releases it)."""
        fd = os.open(self.cache / f".fill-{kind.key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _marker(self, kind: Kind) -> Path:
        return self.cache / f".filled-{kind.key}"

    def holds(self, kind: Kind) -> bool:
        return self._marker(kind).exists()

    def add(self, kind: Kind) -> None:
        self._marker(kind).touch()


class FilledThisProcess:
    """Kinds filled by this judge process (a cache whose files the judge cannot see)."""

    def __init__(self) -> None:
        self._keys: set[str] = set()

    def holds(self, kind: Kind) -> bool:
        return kind.key in self._keys

    def lock(self, kind: Kind) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def add(self, kind: Kind) -> None:
        self._keys.add(kind.key)


def needs_fill(kind: Kind) -> bool:
    return kind.uses_jax and kind.warmup is not None


def fill(kind: Kind, memory_bytes: int, record: FillRecord,
         spawn_filler: Callable[[Kind, int], Started], timeout_s: float = 300) -> bool:
    """Run `kind`'s warm-up in a sandbox that `spawn_filler` starts with the cache writable,
    unless the cache holds it already; True when it does. Another judge filling the same
    kind of the same cache is waited for."""
    if not needs_fill(kind) or record.holds(kind):
        return True
    with record.lock(kind):
        return record.holds(kind) or _fill(kind, memory_bytes, record, spawn_filler, timeout_s)


def _fill(kind: Kind, memory_bytes: int, record: FillRecord,
          spawn_filler: Callable[[Kind, int], Started], timeout_s: float) -> bool:
    sp = spawn_filler(kind, memory_bytes)
    try:
        ok = wait_warm(sp, timeout_s)
        warm: dict = next((f.header for f in sp.reader.frames if f.ev == "warm"), {})
        if warm.get("warmup_error"):
            log.warning("warm-up failed while filling the cache:\n%s", warm["warmup_error"])
            ok = False
    finally:
        sp.destroy()
    if ok:
        record.add(kind)
    return ok


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


def ensure_dir(root: Path) -> Path:
    cache = cache_dir_for(root)
    cache.mkdir(parents=True, exist_ok=True)
    # The sandboxes' uids only read it: it must be reachable, never writable, for them.
    for p in [cache, *cache.parents][:3]:
        try:
            p.chmod((p.stat().st_mode | 0o755) & ~0o022)
        except PermissionError:
            break
    closed = unreachable_parent(cache)
    if closed is not None and os.geteuid() == 0:
        # The sandboxes (other uids) could neither read nor fill it: every job would compile.
        log.warning("the compilation cache %s is closed to the sandboxes: its folder %s is "
                    "not searchable by other users (chmod o+x it, or set "
                    "TENSORJUDGE_COMPILE_CACHE_ROOT elsewhere)", cache, closed)
    return cache


def unreachable_parent(path: Path) -> Path | None:
    """The first folder above `path` that other users cannot pass through, if any."""
    for p in reversed(path.parents):
        if not p.stat().st_mode & 0o001:
            return p
    return None


def clear(root: Path) -> None:
    shutil.rmtree(root / "xla", ignore_errors=True)
