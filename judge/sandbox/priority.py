"""A sandbox's share of a contended CPU."""

from __future__ import annotations

from enum import IntEnum

from judge.sandbox.job import Kind


class CpuPriority(IntEnum):
    """A sandbox's share of a contended CPU, in cgroup v1's and the Docker engine's
    `cpu.shares` (`weight`: cgroup v2's scale). The limits count each sandbox's own CPU time,
    so a share moves only when a verdict comes, never which. A spare being prepared yields to
    every job. A light job (NumPy: milliseconds of work) goes ahead of seconds of JAX and
    PyTorch imports and compilation, the shortest job first: on a fresh machine, where every
    framework's first submission arrives at once, it would otherwise wait on a fifth of the
    CPU."""

    BACKGROUND = 2
    # A job behind one per core that came first (judge/sandbox/turns.py): it uses what those
    # leave idle and takes next to nothing from them.
    YIELD = 16
    NORMAL = 1024
    LIGHT = 4096

    @classmethod
    def of_job(cls, kind: Kind) -> CpuPriority:
        return cls.LIGHT if kind.light else cls.NORMAL

    @property
    def weight(self) -> int:
        return max(1, round(self.value * 100 / 1024))
