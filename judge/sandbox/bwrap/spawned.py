"""One started sandbox, single use: its first process, its result channel and its cgroup,
and how it is torn down whichever way it started (bubblewrap, or forked by a fork server)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass, field

from judge.sandbox.bwrap.cgroups import Cgroup
from judge.sandbox.bwrap.forkserver import ForkedProcess
from judge.sandbox.io_loop import RawRun, reap
from judge.sandbox.job import Kind
from judge.sandbox.priority import CpuPriority
from judge.sandbox.time_limits import group_computing
from judge.wire import FrameReader

Process = subprocess.Popen | ForkedProcess


@dataclass
class Spawned:
    """One started sandbox: single use, destroyed after its job (or when discarded)."""

    proc: Process
    chan_r: int
    cgroup: Cgroup | None
    uid: int
    t_spawn: float
    kind: Kind  # what it prepared
    reader: FrameReader = field(default_factory=lambda: FrameReader(max_payload=lambda h: 0))
    niced: bool = False
    # Forked from a warmed fork server: it cannot compile, and hands such jobs back.
    warmed: bool = False
    warm_ms: float | None = None
    oom_killed: bool = False
    peak_bytes: int | None = None
    _destroyed: bool = False
    priority: CpuPriority | None = None  # its job's (None: its kind's), set by weigh()

    def foreground(self) -> None:
        """Its job's CPU priority, every thread of every process (niceness is per thread on
        Linux)."""
        if not self.niced or self.cgroup is None:
            return
        self.niced = False
        self.cgroup.set_priority(self.priority or CpuPriority.of_job(self.kind))
        for pid in self.cgroup.pids():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                with contextlib.suppress(OSError):
                    os.setpriority(os.PRIO_PROCESS, int(tid), 0)

    def weigh(self, priority: CpuPriority) -> None:
        """Its job's CPU weight from now on (a spare's takes effect at foreground())."""
        self.priority = priority
        if not self.niced and self.cgroup is not None:
            self.cgroup.set_priority(priority)

    def alive(self) -> bool:
        return self.proc.poll() is None and self.reader.error is None

    def memory_bytes(self) -> int | None:
        """Memory charged to the sandbox now (None without a memory cgroup)."""
        return self.cgroup.usage_bytes() if self.cgroup is not None else None

    def cpu_seconds(self) -> float | None:
        """CPU time of everything in the sandbox so far, from its cgroup (forked sandboxes
        join it too); None without one."""
        return self.cgroup.cpu_seconds() if self.cgroup is not None else None

    def computing(self) -> bool:
        if self.cgroup is None or self.cgroup.cpuacct_dir is None:
            return False
        return group_computing(self.cgroup.cpuacct_dir)

    def kill_group(self) -> None:
        """SIGKILL to the process group a bubblewrap sandbox runs in. A forked sandbox's first
        process is not the judge's child, so its pid may be reused once it is gone: those are
        killed through their cgroup only (the fork server is used only with cgroups)."""
        if isinstance(self.proc, subprocess.Popen):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, 9)

    def destroy(self) -> None:
        if self._destroyed:
            return
        self._destroyed = True
        if self.cgroup is not None:
            self.cgroup.kill_all()
        self.kill_group()
        with contextlib.suppress(OSError):
            os.close(self.chan_r)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        reap(self.proc, 30.0, RawRun())
        if isinstance(self.proc, ForkedProcess):
            self.proc.close()
        if self.cgroup is not None:
            self.oom_killed = self.cgroup.oom_killed()
            self.peak_bytes = self.cgroup.peak_bytes()
            self.cgroup.remove()
