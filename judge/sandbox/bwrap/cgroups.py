"""A private cgroup per sandbox for memory and process count, on cgroup v1 or v2, and the
sandbox's CPU time (the clock its time limit is measured on: cpuacct on v1, cpu.stat on v2).

The sandbox's first process puts itself in (the launcher writes its own pid before it drops
privileges and execs bubblewrap), so nothing it starts ever runs outside the group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from judge.sandbox.cgroup_files import write, write_cpu_weight, write_memory_limit
from judge.sandbox.priority import CpuPriority
from judge.sandbox.time_limits import cgroup_cpu_seconds

ROOT = Path("/sys/fs/cgroup")
PARENT = "tensorjudge"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _events_count(text: str, key: str) -> int:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


@dataclass
class Cgroup:
    """One sandbox's group: `procs_files` are where its first process writes its pid."""

    version: int
    dirs: list[Path]
    procs_files: list[Path]
    memory_dir: Path | None
    cpu_dir: Path | None = None
    # Where its CPU time is kept: v1's cpuacct group, v2's own folder (cpu.stat is there
    # whether or not the cpu controller is enabled).
    cpuacct_dir: Path | None = None

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by everything in the group (None where it cannot be read)."""
        if self.cpuacct_dir is None:
            return None
        return cgroup_cpu_seconds(self.cpuacct_dir)

    def set_priority(self, priority: CpuPriority) -> None:
        """CPU weight (priority.CpuPriority). Niceness alone would not do: each sandbox is a
        session of its own, and the kernel's autogroups share the CPU between sessions
        equally whatever their niceness."""
        if self.cpu_dir is None:
            return
        with contextlib.suppress(OSError):
            write_cpu_weight(self.cpu_dir, self.version, priority)

    def set_memory_limit(self, memory_bytes: int) -> None:
        """Tighten the limit for the job (a pooled sandbox is prepared under a looser one)."""
        if self.memory_dir is not None:
            write_memory_limit(self.memory_dir, self.version, memory_bytes)

    def oom_killed(self) -> bool:
        if self.memory_dir is None:
            return False
        if self.version == 2:
            return _events_count(_read(self.memory_dir / "memory.events"), "oom_kill") > 0
        ctl = _read(self.memory_dir / "memory.oom_control")
        if _events_count(ctl, "oom_kill") > 0:
            return True
        # Kernels without the oom_kill counter: a hit limit plus a kill is the best evidence.
        return int(_read(self.memory_dir / "memory.failcnt") or 0) > 0

    def _stat(self, key: str) -> int | None:
        if self.memory_dir is None:
            return None
        for line in _read(self.memory_dir / "memory.stat").splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
        return None

    def _memory_number(self, v2_name: str, v1_name: str) -> int | None:
        """A memory controller file holding one number (None without one, or for "max")."""
        if self.memory_dir is None:
            return None
        text = _read(self.memory_dir / (v2_name if self.version == 2 else v1_name)).strip()
        return int(text) if text.isdigit() else None

    def limit_bytes(self) -> int | None:
        return self._memory_number("memory.max", "memory.limit_in_bytes")

    def failures(self) -> int | None:
        """How often the group's usage met its limit (v1 memory.failcnt, v2 the `max` event)."""
        if self.memory_dir is None:
            return None
        if self.version == 2:
            return _events_count(_read(self.memory_dir / "memory.events"), "max")
        text = _read(self.memory_dir / "memory.failcnt").strip()
        return int(text) if text.isdigit() else None

    def at_limit(self, window_s: float = 0.3) -> bool:
        """Whether the group is stalled against its memory limit now: its usage at the limit
        and, within `window_s`, the limit met again (v2's `max` event, v1's failcnt where the
        kernel counts it) or pages taken back to make room (v2's pgsteal, v1's pgpgout). A
        process that filled its memory and then computes or sleeps does neither."""
        limit, usage = self.limit_bytes(), self.usage_bytes()
        if limit is None or usage is None or usage < limit - limit // 8:
            return False
        first = self._reclaim_marks()
        deadline = time.monotonic() + window_s
        while time.monotonic() < deadline:
            time.sleep(0.02)
            if any(now > then for now, then in zip(self._reclaim_marks(), first, strict=True)):
                return True
        return False

    def _reclaim_marks(self) -> tuple[int, int]:
        return (self.failures() or 0,
                self._stat("pgsteal" if self.version == 2 else "pgpgout") or 0)

    def pressing_limit(self, window_s: float = 0.5) -> bool:
        """Whether the group is working against its memory limit now: its usage at the limit
        and its pages read back from disk (major faults) within `window_s`, i.e. what was
        evicted to make room is needed again. With no swap, such a process (its own code's
        pages going and coming back) can go on for longer than any time limit before the
        OOM killer acts. Neither alone will do: a process can sit at its limit computing, or
        fault pages in far from it (a first import)."""
        limit, usage = self.limit_bytes(), self.usage_bytes()
        if limit is None or usage is None or usage < limit - limit // 8:
            return False
        first = self._stat("pgmajfault")
        if first is None:
            return False
        # Polled: on a disk that is slow just then, one fault can take a while.
        deadline = time.monotonic() + window_s
        while time.monotonic() < deadline:
            time.sleep(0.02)
            if (self._stat("pgmajfault") or 0) > first:
                return True
        return False

    def usage_bytes(self) -> int | None:
        return self._memory_number("memory.current", "memory.usage_in_bytes")

    def peak_bytes(self) -> int | None:
        return self._memory_number("memory.peak", "memory.max_usage_in_bytes")

    def pids(self) -> list[int]:
        out: set[int] = set()
        for f in self.procs_files:
            for line in _read(f).split():
                if line.isdigit():
                    out.add(int(line))
        return sorted(out)

    def kill_all(self) -> None:
        if self.version == 2 and (self.dirs[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                write(self.dirs[0] / "cgroup.kill", "1")
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(100):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


class CgroupManager:
    """Creates per-sandbox groups if this host lets us; `available` says whether it does."""

    def __init__(self, root: Path = ROOT):
        self.root = root
        self.version = 0
        self.reason = ""
        self.cpu = False  # a cpu controller too (optional: priorities only)
        self.cpuacct = False  # v1: a cpuacct hierarchy of its own (the CPU clock)
        self._detect()

    @property
    def available(self) -> bool:
        return self.version in (1, 2)

    def _detect(self) -> None:
        if os.geteuid() != 0:
            self.reason = "not running as root"
            return
        if (self.root / "cgroup.controllers").exists():
            controllers = _read(self.root / "cgroup.controllers").split()
            if not {"memory", "pids"} <= set(controllers):
                self.reason = "cgroup v2 without memory and pids controllers"
                return
            parent = self.root / PARENT
            try:
                parent.mkdir(exist_ok=True)
                write(self.root / "cgroup.subtree_control", "+memory +pids")
                write(parent / "cgroup.subtree_control", "+memory +pids")
            except OSError as e:
                self.reason = f"cgroup v2 not delegable here: {e}"
                return
            self.version = 2
            if "cpu" in controllers:
                with contextlib.suppress(OSError):
                    write(self.root / "cgroup.subtree_control", "+cpu")
                    write(parent / "cgroup.subtree_control", "+cpu")
                    self.cpu = True
            return
        mem, pids = self.root / "memory", self.root / "pids"
        if mem.is_dir() and pids.is_dir():
            try:
                (mem / PARENT).mkdir(exist_ok=True)
                (pids / PARENT).mkdir(exist_ok=True)
            except OSError as e:
                self.reason = f"cgroup v1 not writable: {e}"
                return
            self.version = 1
            if (self.root / "cpu" / "cpu.shares").exists():
                with contextlib.suppress(OSError):
                    (self.root / "cpu" / PARENT).mkdir(exist_ok=True)
                    self.cpu = True
            # cpuacct is often mounted with cpu (cpu,cpuacct): then the cpu group counts.
            if not self._cpuacct_with_cpu and (self.root / "cpuacct" / "cpuacct.usage").exists():
                with contextlib.suppress(OSError):
                    (self.root / "cpuacct" / PARENT).mkdir(exist_ok=True)
                    self.cpuacct = True
            return
        self.reason = "no memory and pids cgroup controllers mounted"

    @property
    def _cpuacct_with_cpu(self) -> bool:
        return self.cpu and (self.root / "cpu" / "cpuacct.usage").exists()

    def parents(self) -> list[Path]:
        if self.version == 2:
            return [self.root / PARENT]
        if self.version == 1:
            cpu = [self.root / "cpu" / PARENT] if self.cpu else []
            cpuacct = [self.root / "cpuacct" / PARENT] if self.cpuacct else []
            return [self.root / "memory" / PARENT, self.root / "pids" / PARENT] + cpu + cpuacct
        return []

    def cpu_group(self) -> Cgroup | None:
        """A group with only a CPU weight (None without a CPU controller), beside the
        sandboxes' and named like theirs (reap_stale removes it once its judge is gone): a
        fork server's. Left in the judge's group instead, each zygote importing its
        libraries would weigh as much as all the sandboxes together, and as the judge's own
        process: a fresh machine's first light job, and the judge answering it, would get
        a fraction of a core beside them."""
        if not self.cpu:
            return None
        base = self.root / PARENT if self.version == 2 else self.root / "cpu" / PARENT
        d = base / f"sb-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            d.mkdir()
        except OSError:
            return None
        return Cgroup(self.version, [d], [d / "cgroup.procs"], None, cpu_dir=d)

    def reap_stale(self) -> int:
        """Remove the groups of sandboxes whose judge process is gone (a worker killed with
        SIGKILL cannot remove its own); whatever still runs in one is killed first. Groups of
        live judges, this one's included, are left alone. Returns how many were removed."""
        removed = 0
        for parent in self.parents():
            try:
                entries = list(parent.iterdir())
            except OSError:
                continue
            for d in entries:
                parts = d.name.split("-")
                if len(parts) < 3 or parts[0] != "sb" or not parts[1].isdigit():
                    continue
                try:
                    os.kill(int(parts[1]), 0)
                    continue  # its judge is alive
                except ProcessLookupError:
                    pass
                except PermissionError:
                    continue
                group = Cgroup(self.version, [d], [d / "cgroup.procs"], None)
                group.remove()
                removed += not d.exists()
        return removed

    def create(self, memory_bytes: int, max_pids: int) -> Cgroup:
        name = f"sb-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        if self.version == 2:
            d = self.root / PARENT / name
            d.mkdir()
            write(d / "memory.max", str(memory_bytes))
            if (d / "memory.swap.max").exists():
                write(d / "memory.swap.max", "0")
            if (d / "memory.oom.group").exists():
                write(d / "memory.oom.group", "1")
            write(d / "pids.max", str(max_pids))
            return Cgroup(2, [d], [d / "cgroup.procs"], d, d if self.cpu else None, d)
        mem = self.root / "memory" / PARENT / name
        pids = self.root / "pids" / PARENT / name
        mem.mkdir()
        pids.mkdir()
        write(mem / "memory.limit_in_bytes", str(memory_bytes))
        if (mem / "memory.memsw.limit_in_bytes").exists():
            with contextlib.suppress(OSError):
                write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))
        write(pids / "pids.max", str(max_pids))
        group = Cgroup(1, [mem, pids], [mem / "cgroup.procs", pids / "cgroup.procs"], mem)
        for controller, wanted in (("cpu", self.cpu), ("cpuacct", self.cpuacct)):
            if not wanted:
                continue
            d = self.root / controller / PARENT / name
            try:
                d.mkdir()
            except OSError:
                continue
            group.dirs.append(d)
            group.procs_files.append(d / "cgroup.procs")
            if controller == "cpu":
                group.cpu_dir = d
                if self._cpuacct_with_cpu:
                    group.cpuacct_dir = d
            else:
                group.cpuacct_dir = d
        return group
