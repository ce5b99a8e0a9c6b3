"""A cgroup's CPU weight and memory limit, written on v1 or v2: the same files whoever made
the group (a bubblewrap sandbox's own group, a container's as its engine made it)."""

from __future__ import annotations

from pathlib import Path

from judge.sandbox.priority import CpuPriority


def write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def write_cpu_weight(cpu_dir: Path, version: int, priority: CpuPriority) -> None:
    """Raises OSError where the group cannot be written."""
    if version == 2:
        write(cpu_dir / "cpu.weight", str(priority.weight))
    else:
        write(cpu_dir / "cpu.shares", str(priority.value))


def write_memory_limit(memory_dir: Path, version: int, memory_bytes: int) -> None:
    """The group's memory limit, swap included where the kernel counts it (v1's memsw, which
    must stay at or above the limit at every step: the two writes are ordered for that).
    Raises OSError where the limit itself cannot be written."""
    if version == 2:
        write(memory_dir / "memory.max", str(memory_bytes))
        return
    memsw = memory_dir / "memory.memsw.limit_in_bytes"
    limit = memory_dir / "memory.limit_in_bytes"
    try:
        current = int(limit.read_text() or 0)
    except (OSError, ValueError):
        current = 0
    pairs = [(limit, memory_bytes), (memsw, memory_bytes)]
    if memory_bytes > current:
        pairs.reverse()
    for path, value in pairs:
        if path.exists():
            try:
                write(path, str(value))
            except OSError:
                if path == limit:
                    raise
