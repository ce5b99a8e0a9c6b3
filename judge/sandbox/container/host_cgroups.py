"""A container's cgroups as the Docker engine's host shows them, for a judge on that host:
its CPU time and memory read, its CPU weight and memory limit set, each in a file of its own.
Asking the engine instead costs tens of milliseconds of its work per call (dockerd, containerd,
runc), at the host's priority, beside the job the call is for. A judge that sees none of them
(in a container of its own, as in compose) asks the engine.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from judge.sandbox.cgroup_files import write_cpu_weight, write_memory_limit
from judge.sandbox.priority import CpuPriority
from judge.sandbox.time_limits import cgroup_cpu_seconds, group_computing

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _places(cid: str, controller: str) -> list[Path]:
    """Where a container's group of `controller` is, for either cgroup driver; v2 has one
    folder for every controller."""
    v1 = [f"{controller}/docker/{cid}", f"{controller}/system.slice/docker-{cid}.scope"]
    v2 = [f"docker/{cid}", f"system.slice/docker-{cid}.scope"]
    return [CGROUP_ROOT / p for p in (*v1, *v2)]


@dataclass(frozen=True)
class HostCgroups:
    """`cpu`: where its CPU time is (v1's cpuacct, v2's folder); None for a group this host
    does not show."""

    cid: str
    version: int
    cpu: Path | None
    cpu_weight: Path | None
    memory: Path | None

    @classmethod
    def find(cls, cid: str) -> HostCgroups:
        def first(controller: str, name: str) -> Path | None:
            return next((p for p in _places(cid, controller) if (p / name).exists()), None)

        memory = first("memory", "memory.limit_in_bytes") or first("memory", "memory.max")
        version = 2 if memory is not None and (memory / "memory.max").exists() else 1
        cpu = next((p for c in ("cpuacct", "cpu,cpuacct") for p in _places(cid, c)
                    if cgroup_cpu_seconds(p) is not None), None)
        weight = first("cpu", "cpu.shares") or first("cpu", "cpu.weight")
        return cls(cid, version, cpu, weight, memory)

    def cpu_seconds(self) -> float | None:
        return None if self.cpu is None else cgroup_cpu_seconds(self.cpu)

    def computing(self) -> bool:
        return self.cpu is not None and group_computing(self.cpu)

    def memory_bytes(self) -> int | None:
        if self.memory is None:
            return None
        for name in ("memory.usage_in_bytes", "memory.current"):
            with contextlib.suppress(OSError, ValueError):
                return int((self.memory / name).read_text())
        return None

    def set_weight(self, priority: CpuPriority) -> bool:
        """Whether it was set here (else the engine must be asked)."""
        if self.cpu_weight is None:
            return False
        try:
            write_cpu_weight(self.cpu_weight, self.version, priority)
        except OSError:
            return False
        return True

    def set_memory_limit(self, memory_bytes: int) -> bool:
        """Whether it was set here: written, and read back as written (a limit is part of
        the verdict; where this is not sure, the engine is asked)."""
        if self.memory is None:
            return False
        try:
            write_memory_limit(self.memory, self.version, memory_bytes)
            names = (["memory.max"] if self.version == 2 else
                     ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"])
            return all(int((self.memory / n).read_text()) == memory_bytes
                       for n in names if (self.memory / n).exists())
        except (OSError, ValueError):
            return False
