"""What a sandbox's run says: its frames, exit and limits read as one verdict per test. Trusted
code on captured data: every frame is checked before it counts, the outputs are compared with
the reference's here, outside the sandbox."""

from __future__ import annotations

import signal

from judge import wire
from judge.compare import compare
from judge.diagnosis.params import parse_variables
from judge.package import Tolerance
from judge.prepared import PreparedTests
from judge.sandbox.io_loop import RawRun, RunPlan
from judge.verdicts import JudgeResult, TestResult, Verdict, aggregate


def _signal_of(returncode: int | None) -> int | None:
    """bubblewrap reports a child killed by signal N as exit code 128 + N."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    if returncode > 128:
        return returncode - 128
    return None


def _fatal(raw: RawRun, plan: RunPlan) -> tuple[Verdict, str]:
    """Why a run that did not finish ended, as the verdict of the test it was in."""
    limit_s = plan.time_ms / 1000
    if raw.ole:
        return Verdict.OLE, (f"more than {plan.ole_limit >> 10} KiB written to stdout/stderr")
    if raw.channel_error:
        return Verdict.RE, f"the result channel was misused: {raw.channel_error}"
    if raw.oom_killed:
        return Verdict.MLE, f"memory limit of {plan.memory_bytes >> 20} MiB exceeded"
    if raw.timed_out and raw.memory_bound:
        return Verdict.MLE, (f"memory limit of {plan.memory_bytes >> 20} MiB reached: the run "
                             f"spent its time at the limit until the time limit of "
                             f"{limit_s:g} s ran out")
    if raw.timed_out:
        return Verdict.TLE, f"time limit of {limit_s:g} s exceeded"
    sig = _signal_of(raw.returncode)
    cpu_hit = raw.cpu_s is not None and raw.cpu_s >= plan.cpu_seconds
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_hit):
        return Verdict.TLE, "CPU time limit exceeded"
    if sig == signal.SIGSYS:
        return Verdict.RE, ("killed by the sandbox: a forbidden system call (network, "
                            "process execution, tracing or namespaces are not allowed)")
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return Verdict.RE, f"the process was killed by {name}"
    return Verdict.RE, f"the process exited without a result (exit code {raw.returncode})"


def interpret(raw: RawRun, prepared: PreparedTests, tol: Tolerance, plan: RunPlan) -> JudgeResult:
    stdout = raw.stdout.decode("utf-8", errors="replace")
    stderr = raw.stderr.decode("utf-8", errors="replace")
    tests = [TestResult(t.name, None, message="not run: an earlier test ended the run")
             for t in prepared.tests]

    def finish(**kw: object) -> JudgeResult:
        res = aggregate(tests, stdout=stdout, stderr=stderr, **kw)  # type: ignore[arg-type]
        res.startup_ms = raw.ready_ms
        return res

    if raw.first("ready") is None:
        if raw.oom_killed or raw.ole or raw.channel_error:
            pass  # the sandbox started far enough for the user to misbehave; judged below
        else:
            return finish(internal_error="the sandbox did not start: "
                          + (stderr.strip()[-500:] or f"exit code {raw.returncode}"))
    if (f := raw.first("compile_error")) is not None:
        return finish(compile_error=str(f.header.get("message", "compile error")))
    if (f := raw.first("missing_entry")) is not None:
        return finish(compile_error=str(f.header.get("message", "entry point missing")))
    if (f := raw.first("module_error")) is not None:
        for t in tests:
            t.verdict, t.message = Verdict.RE, "the module raised before any test ran"
        return finish(message=str(f.header.get("message")))

    first_traceback: str | None = None
    for frame in raw.frames:
        i = frame.header.get("test")
        if not isinstance(i, int) or not 0 <= i < len(tests) or tests[i].verdict is not None:
            continue
        judged = test_from_frame(frame, i, prepared, tol)
        if judged is None:
            continue
        tests[i] = judged
        if frame.ev == "error":
            first_traceback = first_traceback or str(frame.header.get("message", ""))

    if not raw.done or raw.ole:
        verdict, why = _fatal(raw, plan)
        pending = [t for t in tests if t.verdict is None]
        cur = raw.current_test
        target = tests[cur] if isinstance(cur, int) and 0 <= cur < len(tests) else None
        if target is None or target.verdict is not None:
            target = pending[0] if pending else (tests[-1] if tests else None)
        if target is not None:
            target.verdict, target.message = verdict, why
            if verdict is Verdict.TLE:
                target.time_ms = float(plan.time_ms)
        if target is None or not prepared.tests:
            return finish(internal_error=why)
        return finish(message=first_traceback or why)
    unreported = next((t for t in tests if t.verdict is None), None)
    if unreported is not None:
        # The runner reports every test before `done`: a `done` with tests missing was
        # written by the submission itself (it can reach the result channel). Its fault, not
        # the judge's: RE, never IE (which would be retried and blamed on the judge).
        unreported.verdict = Verdict.RE
        unreported.message = ("the run ended before this test reported a result (the result "
                              "channel was misused)")
        return finish(message=first_traceback or unreported.message)
    return finish(message=first_traceback)


def test_from_frame(frame: wire.Frame, i: int, prepared: PreparedTests,
                    tol: Tolerance) -> TestResult | None:
    """The verdict of test `i` from its result frame (None for frames that are not one)."""
    if frame.ev not in ("result", "error", "bad_output"):
        return None
    time_ms = _float(frame.header.get("time_ms"))
    name = prepared.tests[i].name
    if frame.ev == "result":
        try:
            got = wire.result_array(frame)
        except wire.WireError as e:
            return TestResult(name, Verdict.RE, time_ms=time_ms, message=str(e))
        t = compare(name, got, prepared.expected[i], prepared.shapes[i], tol, time_ms)
        t.compile_ms = _float(frame.header.get("compile_ms"))
        t.output = got  # for the diagnosis, after the run
        t.variables = parse_variables(frame.header.get("variables"))
        return t
    if frame.ev == "error":
        # The exception itself, as the runner gave it apart; else the traceback's last line.
        exc = frame.header.get("exception")
        tb = str(frame.header.get("message", ""))
        if isinstance(exc, str) and exc.strip():
            last = exc.strip()
        else:
            last = tb.strip().splitlines()[-1] if tb.strip() else "exception"
        return TestResult(name, Verdict.RE, time_ms=time_ms, message=last)
    return TestResult(name, Verdict.WA, time_ms=time_ms, shape=_shape(frame.header.get("shape")),
                      message=str(frame.header.get("message", "bad output")))


def _float(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) else None


def _shape(x: object) -> list[int] | None:
    if isinstance(x, list) and all(isinstance(v, int) for v in x):
        return x
    return None
