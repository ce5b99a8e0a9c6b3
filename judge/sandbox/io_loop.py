"""The host side of one sandbox run: feed the job, watch three pipes and the clocks.

Whatever the submission does, this loop ends: on the runner's `done`, on a per-phase limit, on
too much output, or on a corrupt result channel; each ends by killing the group.

Each phase's limits (CPU time, a wall-clock guard) are time_limits.py's.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Protocol

from judge.sandbox.time_limits import WALL_GUARD, PhaseLimits, TimeLimit, compile_s
from judge.wire import Frame, FrameReader


class SandboxProcess(Protocol):
    """A sandbox's first process as the loop sees it, whoever started it: a Popen, or a
    stand-in with the same face (forked by a zygote, running in a container) whose `wait`
    also fills `cpu_s` where it can."""

    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...


class OutputTally:
    """Bytes written so far by all the parts of one submission."""

    def __init__(self) -> None:
        self.total = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.total += n


@dataclass
class RunPlan:
    time_ms: int  # per test: CPU time (wall time where the backend has no CPU clock)
    memory_bytes: int
    output_cap: int  # bytes of stdout and of stderr kept
    ole_limit: int  # total stdout + stderr bytes beyond which the run is OLE
    expected_sizes: list[int]
    # Called with each frame as it arrives (live progress); must be quick, and its failures
    # are ignored: progress is a courtesy, the verdict comes from the frames at the end.
    on_frame: Callable[[Frame], None] | None = None
    # Output written by every part of a submission cut across sandboxes (judge/parallel.py):
    # the OLE limit holds for their total, as it would in one sandbox.
    shared_output: OutputTally | None = None
    # JAX compilation inside the submission's function is charged here, per submission, not
    # to the test it happened in (judge/interpret.py charges it from the runner's compile_ms).
    compile_budget_ms: int = 0
    # The job may compile JAX: a test that starts compiling (the runner's `compiling` frame)
    # may spend up to one more limit live, for compilation reported afterwards.
    compiles: bool = False
    wall_guard: float = WALL_GUARD
    # Per test, how its Flax parameters are redrawn (judge/portable/flax_redraw.py), or None.
    redraws: list[dict | None] = field(default_factory=list)

    def output_over(self, own_total: int) -> bool:
        total = own_total if self.shared_output is None else self.shared_output.total
        return total > self.ole_limit

    @property
    def cpu_seconds(self) -> int:
        """The runner's RLIMIT_CPU (per process): a backstop well past the job's own limits,
        for a sandbox without a CPU clock (or a loop that hides from the loop's)."""
        n = len(self.expected_sizes) + 1
        return int(2 * (n * self.time_ms + self.compile_budget_ms) / 1000) + 2

    def compile_grace_s(self, compile_charged_s: float) -> float:
        """What a test may spend live beyond its limit, for compilation the runner reports
        only once the test is over: one more limit at most, and no more than the budget has
        left. The verdict is charged exactly afterwards (judge/interpret.py)."""
        if not self.compiles:
            return 0.0
        left = self.compile_budget_ms / 1000 - compile_charged_s
        return max(0.0, min(left, self.time_ms / 1000))

    @property
    def job_cpu_s(self) -> float:
        """All the job may spend from `ready` on: a limit per test, the module's and one spare,
        and the compile budget."""
        return ((len(self.expected_sizes) + 2) * self.time_ms + self.compile_budget_ms) / 1000

    def max_payload(self, header: dict) -> int:
        if header.get("ev") != "result":
            return 0
        i = header.get("test")
        if not isinstance(i, int) or not 0 <= i < len(self.expected_sizes):
            return 0
        return 8 * self.expected_sizes[i]


@dataclass
class RawRun:
    frames: list[Frame] = field(default_factory=list)
    channel_error: str | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    output_total: int = 0
    ole: bool = False
    timed_out: bool = False
    timeout_phase: str | None = None  # startup | module | test | between | after
    timeout_limit: TimeLimit | None = None  # which limit ended it
    current_test: int | None = None  # the test running when the run ended
    # CPU time of each test (begin to its result), and of the one running at a time-out, in
    # ms, where the backend has a CPU clock.
    test_cpu_ms: dict[int, float] = field(default_factory=dict)
    wall_ms: float = 0.0
    ready_ms: float | None = None
    returncode: int | None = None
    oom_killed: bool = False
    # Still meeting its memory limit when it was killed (see Cgroup.pressing_limit).
    memory_bound: bool = False
    peak_memory_bytes: int | None = None
    cpu_s: float | None = None  # of the sandbox's process tree, where the kernel reports it
    finished: bool = False  # the runner reported a final frame; teardown may come later
    warm: dict | None = None  # the preparation report, when it arrived during this run
    spawn_warm_ms: float | None = None  # spawn to warm, for a pooled sandbox
    # This run is a backend's rerun of one that timed out (the bubblewrap backend's warm
    # fork hands such runs back): a time-out here has been met twice.
    rerun_after_timeout: bool = False

    def first(self, ev: str) -> Frame | None:
        return next((f for f in self.frames if f.ev == ev), None)

    @property
    def done(self) -> bool:
        return self.first("done") is not None


def reap(proc: SandboxProcess, timeout: float, raw: RawRun) -> int | None:
    """Wait for the sandbox's first process, keeping its tree's CPU time (wait4's rusage)."""
    if proc.returncode is not None:
        return proc.returncode
    if not isinstance(proc, subprocess.Popen):
        try:
            raw.returncode = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        raw.cpu_s = getattr(proc, "cpu_s", None)
        return raw.returncode
    end = time.monotonic() + timeout
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            return proc.returncode
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            raw.returncode = proc.returncode
            raw.cpu_s = usage.ru_utime + usage.ru_stime
            return proc.returncode
        if time.monotonic() >= end:
            return None
        time.sleep(0.002)


def _writer(proc: SandboxProcess, job: bytes) -> None:
    try:
        assert proc.stdin is not None
        proc.stdin.write(job)
        proc.stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


def pump(
    proc: SandboxProcess,
    chan_r: int,
    job: bytes,
    plan: RunPlan,
    kill: Callable[[], None],
    startup_timeout_s: float,
    reader: FrameReader | None = None,
    cpu: Callable[[], float | None] | None = None,
    computing: Callable[[], bool] | None = None,
) -> RawRun:
    """`reader` carries frames already read during preparation (a pooled sandbox's `warm`);
    `cpu` is the sandbox's CPU clock (Started.cpu_seconds: total seconds, None where it
    cannot be read), without which the limits are on the wall clock; `computing`
    (Started.computing) keeps the wall guard off a sandbox the host starves of CPU."""
    raw = RawRun()
    t0 = time.monotonic()
    limits = PhaseLimits(cpu, t0, startup_timeout_s, plan.wall_guard, plan.job_cpu_s,
                         plan.compile_budget_ms / 1000, computing)
    writer = threading.Thread(target=_writer, args=(proc, job), daemon=True)
    writer.start()
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    kept = {out_fd: bytearray(), err_fd: bytearray()}
    if reader is None:
        reader = FrameReader(max_payload=plan.max_payload)
    reader.max_payload = plan.max_payload
    n_tests = len(plan.expected_sizes)
    # The runner sends warm, ready, module_start, begin, compiling and result per test and one
    # final frame.
    reader.max_frames = len(reader.frames) + 5 * n_tests + 16
    sel = selectors.DefaultSelector()
    for fd in (out_fd, err_fd, chan_r):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    seen = len(reader.frames)
    step = plan.time_ms / 1000.0
    # Frames come from the sandbox, and once the user's code runs it can forge them: each
    # phase's limit only moves forward in the runner's own order (one `ready`, one
    # `module_start`, each test begun once, in order, and ended once), and the whole job has
    # its own limit from `ready` on (RunPlan.job_cpu_s), whatever the frames say. A forged
    # compile_ms can only spend the compile budget.
    job_started = module_started = False
    begun = graced = -1
    compile_charged = 0.0  # seconds of the compile budget the tests so far have spent

    def take(fd: int) -> int:
        """Read what is there: the byte count, 0 when nothing is waiting, -1 at end of file."""
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return 0
        if not data:
            return -1
        if fd == chan_r:
            reader.feed(data)
        else:
            raw.output_total += len(data)
            if plan.shared_output is not None:
                plan.shared_output.add(len(data))
            room = plan.output_cap - len(kept[fd])
            if room > 0:
                kept[fd] += data[:room]
        return True

    def stop() -> None:
        kill()
        sel.close()

    def test_cpu() -> None:
        used = limits.since_phase_cpu()
        if used is not None and raw.current_test is not None:
            raw.test_cpu_ms[raw.current_test] = used * 1000.0

    while sel.get_map():
        hit = limits.over(time.monotonic())
        if hit is not None:
            raw.timed_out, raw.timeout_phase, raw.timeout_limit = True, limits.phase, hit
            if limits.phase == "test":
                test_cpu()
            stop()
            break
        for key, _ in sel.select(limits.wait_s(time.monotonic())):
            if take(key.fd) < 0:
                sel.unregister(key.fd)
        if plan.output_over(raw.output_total):
            raw.ole = True
            stop()
            break
        if reader.error:
            raw.channel_error = reader.error
            stop()
            break
        now = time.monotonic()
        for frame in reader.frames[seen:]:
            ev = frame.ev
            if plan.on_frame is not None:
                with contextlib.suppress(Exception):
                    plan.on_frame(frame)
            test = frame.header.get("test")
            phase = limits.phase
            if ev == "warm":
                raw.warm = frame.header
            elif ev == "ready" and not job_started:
                job_started = True
                raw.ready_ms = (now - t0) * 1000.0
                limits.start_job(now)
                limits.enter("module", now, step)
            elif ev == "module_start" and phase == "module" and not module_started:
                module_started = True
                limits.enter("module", now, step)
            elif (ev == "begin" and module_started and phase in ("module", "between")
                  and type(test) is int and begun < test < n_tests):
                begun = raw.current_test = test
                limits.enter("test", now, step)
            elif (ev == "compiling" and phase == "test" and test == raw.current_test
                  and graced < begun):
                # A compilation starts: the test may spend one more limit on it, live.
                graced = begun
                limits.extend(plan.compile_grace_s(compile_charged))
            elif (ev in ("result", "error", "bad_output") and phase == "test"
                  and test == raw.current_test):
                test_cpu()
                compile_charged += compile_s(frame.header, raw.test_cpu_ms.get(begun))
                raw.current_test = None
                limits.enter("between", now, step)
            elif ev in ("done", "compile_error", "module_error", "missing_entry"):
                limits.enter("after", now, 2.0, wall_only=True)
        seen = len(reader.frames)
        if limits.phase == "after":
            # The runner flushed its output before saying so: take what is buffered and end.
            for fd in [out_fd, err_fd]:
                if fd in sel.get_map():
                    while take(fd) > 0 and not plan.output_over(raw.output_total):
                        pass
            raw.ole = plan.output_over(raw.output_total)
            sel.close()
            if raw.ole:
                kill()
            else:
                # A finished run's verdict does not wait for its sandbox to be torn down.
                raw.finished = True
            break
    else:
        sel.close()
    job_cpu = limits.cpu()
    if not raw.finished and reap(proc, 5.0, raw) is None:
        kill()
        reap(proc, 30.0, raw)
    if raw.cpu_s is None:
        raw.cpu_s = job_cpu
    raw.frames = reader.frames
    raw.stdout, raw.stderr = bytes(kept[out_fd]), bytes(kept[err_fd])
    raw.wall_ms = (time.monotonic() - t0) * 1000.0
    writer.join(timeout=1)
    return raw
