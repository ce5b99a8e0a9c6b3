"""One sandbox container once started: its job's CPU weight and memory limit (on the host's
cgroup files where the host shows them, else asked of the engine), and its end."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from judge.sandbox.container.process import ContainerProcess
from judge.sandbox.priority import CpuPriority
from judge.wire import FrameReader

# The engine's calls made off a job's path (shares only matter while the CPU is contended),
# one at a time.
_priorities = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tj-container-priority")


@dataclass
class ContainerSpawned:
    """One sandbox container, single use."""

    proc: ContainerProcess
    api: Any
    t_spawn: float
    memory_limit: int
    priority: CpuPriority  # its job's (priority.CpuPriority)
    niced: bool = False
    on_destroy: Callable[[], None] | None = None
    reader: FrameReader = field(default_factory=lambda: FrameReader(max_payload=lambda h: 0))
    chan_r: int = field(init=False)  # the read end of its result channel
    cid: str = field(init=False)
    warm_ms: float | None = None
    oom_killed: bool = False
    _destroyed: bool = False

    def __post_init__(self) -> None:
        self.chan_r, self.cid = self.proc.chan_r, self.proc.cid

    def alive(self) -> bool:
        return self.proc.poll() is None and self.reader.error is None

    def cpu_seconds(self) -> float | None:
        return self.proc.cpu_seconds()

    def computing(self) -> bool:
        return self.proc.computing()

    def memory_bytes(self) -> int | None:
        # Read on the host (asking the engine costs a second per container); where the host
        # does not show it, the pool's guess stands.
        return self.proc.memory_bytes()

    def foreground(self, *, wait: bool = False) -> None:
        """Its job's CPU shares (a spare's are a spare's until it is taken); `wait`: asked of
        the engine in this thread where it must be (off any job's path)."""
        if self.niced:
            self.niced = False
            self._set_shares(wait=wait)

    def _set_shares(self, *, wait: bool = False) -> None:
        """A file write where the host shows its group; else asked of the engine off the job's
        path (a call takes tens of milliseconds; shares only matter while the CPU is
        contended)."""
        if self.proc.groups.set_weight(self.priority):
            return
        if wait:
            self._ask_engine_shares()
        else:
            _priorities.submit(self._ask_engine_shares)

    def _ask_engine_shares(self) -> None:
        with contextlib.suppress(Exception):
            self.api.update_container(self.cid, cpu_shares=int(self.priority))

    def set_memory_limit(self, memory_bytes: int) -> None:
        """The job's own limit (a spare of its kind may have been made for another problem's),
        with its shares: set on the host where it can be, else asked of the engine, which
        sets both in one call on the job's path."""
        if self.proc.groups.set_memory_limit(memory_bytes):
            self.foreground()
            return
        # Its shares too, whatever was asked before: a call queued off the path may not have
        # been made yet.
        self.niced = False
        with contextlib.suppress(Exception):
            self.api.update_container(self.cid, mem_limit=memory_bytes,
                                      memswap_limit=memory_bytes,
                                      cpu_shares=int(self.priority))

    def weigh(self, priority: CpuPriority) -> None:
        """Its job's CPU shares from now on (a spare's go with its job: foreground())."""
        if priority == self.priority:
            return
        self.priority = priority
        if not self.niced:
            self._set_shares()

    def kill(self) -> None:
        self.proc.stopped.set()
        with contextlib.suppress(Exception):
            self.api.kill(self.cid)

    def destroy(self) -> None:
        """End it; the engine removes it (auto-remove). Its input's end is enough (its first
        process then ends the runner and itself: no call to the engine); a container that
        does not end at that (stalled at its memory limit, say) is killed."""
        if self._destroyed:
            return
        self._destroyed = True
        self.proc.stopped.set()
        if not self.proc.ended.is_set():
            self.proc.end_input()
            if not self.proc.ended.wait(2.0):
                self.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self.oom_killed = self.proc.oom_killed
        self.proc.close()
        if self.on_destroy is not None:
            self.on_destroy()
