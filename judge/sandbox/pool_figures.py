"""What a pool of prepared sandboxes counts of itself (judge/sandbox/pool.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class PoolStats:
    hits: int = 0  # jobs that found a prepared sandbox
    waits: int = 0  # jobs that waited for one being prepared
    cold: int = 0  # jobs that started their own
    spawned: int = 0
    discarded: int = 0
    split: int = 0  # jobs judged in two sandboxes at once


@dataclass(frozen=True)
class PoolFigures:
    """What a pool says of itself (the service's health)."""

    idle: int  # prepared sandboxes waiting for a job
    spawning: int
    idle_memory_mb: int
    hits: int
    waits: int
    cold: int
    spawned: int
    discarded: int
    split: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
