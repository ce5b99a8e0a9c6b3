"""Time limits of one sandbox run, phase by phase (docs/judging.md, "Limits").

A phase of the submission's (its module, each test) is limited by the sandbox's CPU time, read
from the backend's CPU clock (the sandbox's cgroup): what the machine does besides cannot move
it. A wall-clock guard, WALL_GUARD times the larger of the limit and the CPU the phase has used,
ends code that sleeps or waits. Before it does, it looks at the sandbox's threads: while one is
running or waiting for a CPU, the sandbox is computing on a host that gives it less than
1/WALL_GUARD of a core, and the guard waits (the whole job's guard does not). Without a CPU
clock, the limits are on the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

# The wall-clock guard's factor (docs/judging.md, "Limits").
WALL_GUARD = 4.0
CPU_POLL_S = 0.025  # how often the CPU clock is read while the sandbox runs
PROBE_S = 0.2  # how often, past its wall guard, a phase looks for threads that compute
# Why a run was stopped on time: its CPU limit, the wall guard, or the wall-clock limit of a
# backend without a CPU clock.
TimeLimit = Literal["cpu", "wall_guard", "wall"]


class PhaseLimits:
    """The limits of the phase a run is in, and of the whole job from `ready` on. CPU time is
    counted from the job's start: what a pooled sandbox spent preparing is not the job's."""

    def __init__(self, cpu: Callable[[], float | None] | None, now: float,
                 startup_timeout_s: float, wall_guard: float, job_cpu_s: float,
                 compile_budget_s: float, computing: Callable[[], bool] | None = None):
        """`job_cpu_s`: all the job may spend from `ready` on, the compile budget included;
        `computing`: whether a thread of the sandbox is running or waiting for a CPU now."""
        self.wall_guard, self.job_cpu_s = wall_guard, job_cpu_s
        self._computing = computing
        self._probed, self._was_computing = float("-inf"), False
        self.job_base_s = job_cpu_s - compile_budget_s
        self._cpu = cpu
        self._cpu0 = cpu() if cpu is not None else None
        self._job: tuple[float, float | None] | None = None  # wall and CPU at `ready`
        self.phase = "startup"
        self._t, self._allow, self._base, self._wall_only = now, 0.0, 0.0, True
        self._c: float | None = None
        self.enter("startup", now, startup_timeout_s, wall_only=True)

    def cpu(self) -> float | None:
        """The sandbox's CPU seconds since the job's start (None without a CPU clock)."""
        if self._cpu is None or self._cpu0 is None:
            return None
        now = self._cpu()
        return None if now is None else max(0.0, now - self._cpu0)

    def enter(self, phase: str, now: float, allow_s: float, base_s: float | None = None,
              wall_only: bool = False) -> None:
        """A new phase, with `allow_s` of CPU (of wall time if `wall_only`); its wall guard
        grows from `base_s` (the time limit without grace) with the CPU it uses."""
        self.phase, self._t, self._c = phase, now, self.cpu()
        self._allow, self._base, self._wall_only = allow_s, base_s or allow_s, wall_only

    def extend(self, more_s: float) -> None:
        """More CPU for the phase (its wall guard grows only with the CPU it uses)."""
        self._allow += more_s

    def start_job(self, now: float) -> None:
        self._job = (now, self.cpu())

    def since_phase_cpu(self) -> float | None:
        cpu = self.cpu()
        return None if cpu is None or self._c is None else cpu - self._c

    def _over(self, wall: float, used: float | None, allow: float, base: float,
              wall_only: bool) -> TimeLimit | None:
        if wall_only or used is None:
            return "wall" if wall > allow else None
        if used > allow:
            return "cpu"
        if wall > self.wall_guard * max(base, used):
            return "wall_guard"
        return None

    def _starved(self, now: float) -> bool:
        """Whether the sandbox computes still, slowed by the host (looked at every PROBE_S)."""
        if self._computing is None:
            return False
        if now - self._probed >= PROBE_S:
            self._probed, self._was_computing = now, self._computing()
        return self._was_computing

    def over(self, now: float) -> TimeLimit | None:
        """Which limit the run is past, if any."""
        cpu = self.cpu()
        used = None if cpu is None or self._c is None else cpu - self._c
        hit = self._over(now - self._t, used, self._allow, self._base, self._wall_only)
        if hit == "wall_guard" and self._starved(now):
            hit = None
        if hit is None and self._job is not None:
            t, c = self._job
            hit = self._over(now - t, None if cpu is None or c is None else cpu - c,
                             self.job_cpu_s, self.job_base_s, False)
        return hit

    def wait_s(self, now: float) -> float:
        """How long the loop may wait for the sandbox before looking at the clocks again."""
        if self._wall_only or self._c is None:
            left = self._t + self._allow - now
            if self._job is not None:
                left = min(left, self._job[0] + self.job_cpu_s - now)
            return max(left, 0.0)
        return CPU_POLL_S


def compile_s(header: dict, cpu_ms: float | None) -> float:
    """The compile budget a test's frame claims, in seconds: its compile_ms, never more than
    the CPU the test used (the runner times compilation on the wall clock, which a busy
    host stretches)."""
    claim = header.get("compile_ms")
    if not isinstance(claim, int | float) or claim != claim or claim <= 0:
        return 0.0
    if cpu_ms is not None:
        claim = min(claim, cpu_ms)
    return float(claim) / 1000.0


def cgroup_cpu_seconds(group: Path) -> float | None:
    """A cgroup's CPU time: v1's cpuacct.usage (ns) or v2's cpu.stat usage_usec; None where
    neither can be read (the group is gone, say)."""
    try:
        return int((group / "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        pass
    try:
        for line in (group / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
    except (OSError, ValueError):
        pass
    return None


def group_computing(group: Path) -> bool:
    """Whether a thread in the cgroup is running or waiting for a CPU (state R): v1 lists
    every thread in `tasks`, v2 in `cgroup.threads`."""
    for name in ("tasks", "cgroup.threads"):
        try:
            tids = (group / name).read_text().split()
            break
        except OSError:
            continue
    else:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{int(tid)}/stat", "rb") as f:
                stat = f.read()
        except (OSError, ValueError):
            continue
        fields = stat.rpartition(b")")[2].split()
        if fields and fields[0] == b"R":
            return True
    return False
