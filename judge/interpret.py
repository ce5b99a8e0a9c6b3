"""What a sandbox's run says: its frames, exit and limits read as one verdict per test. Trusted
code on captured data: every frame is checked before it counts, the outputs are compared with
the reference's here, outside the sandbox."""

from __future__ import annotations

import re
import signal

from judge import wire
from judge.compare import compare
from judge.diagnosis.params import Tree, explain, parse_variables
from judge.package import Tolerance
from judge.prepared import PreparedTests
from judge.sandbox.io_loop import RawRun, RunPlan
from judge.verdicts import JudgeResult, LimitHit, TestResult, Verdict, aggregate

# An exception that says an allocation failed: memory exhaustion, judged as MLE (Python's and
# NumPy's MemoryError, XLA's and PyTorch's own words).
OUT_OF_MEMORY = re.compile(r"^[\w.]*MemoryError\b|RESOURCE_EXHAUSTED|can't allocate memory")


def _signal_of(returncode: int | None) -> int | None:
    """bubblewrap reports a child killed by signal N as exit code 128 + N."""
    if returncode is None:
        return None
    if returncode < 0:
        return -returncode
    if returncode > 128:
        return returncode - 128
    return None


def _fatal(raw: RawRun, plan: RunPlan) -> tuple[Verdict, str, LimitHit | None]:
    """Why a run that did not finish ended, as the verdict of the test it was in, and the limit
    it met."""
    mib = plan.memory_bytes >> 20
    if raw.ole:
        return Verdict.OLE, f"more than {plan.ole_limit >> 10} KiB written to stdout/stderr", None
    if raw.channel_error:
        return Verdict.RE, f"the result channel was misused: {raw.channel_error}", None
    if raw.oom_killed:
        return Verdict.MLE, f"memory limit of {mib} MiB exceeded", "memory"
    if raw.timed_out and raw.memory_bound:
        return Verdict.MLE, (f"memory limit of {mib} MiB reached: the run stalled at the limit "
                             f"until it ran out of time"), "memory"
    if raw.timed_out:
        return (Verdict.TLE, *_time_out(raw, plan))
    sig = _signal_of(raw.returncode)
    cpu_hit = raw.cpu_s is not None and raw.cpu_s >= plan.cpu_seconds
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_hit):
        return Verdict.TLE, "CPU time limit exceeded", "cpu"
    if sig == signal.SIGSYS:
        return Verdict.RE, ("killed by the sandbox: a forbidden system call (network, "
                            "process execution, tracing or namespaces are not allowed)"), None
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return Verdict.RE, f"the process was killed by {name}", None
    return Verdict.RE, f"the process exited without a result (exit code {raw.returncode})", None


def _time_out(raw: RawRun, plan: RunPlan) -> tuple[str, LimitHit]:
    limit_s = plan.time_ms / 1000
    if raw.timeout_limit == "wall_guard":
        return (f"no result within the wall-clock guard ({plan.wall_guard:g} times the time "
                f"limit of {limit_s:g} s, or of the CPU time used): the code slept or "
                "waited"), "wall_guard"
    if raw.timeout_limit == "wall":
        return (f"time limit of {limit_s:g} s exceeded (on the wall clock: this sandbox has "
                "no CPU clock)"), "wall"
    used = raw.test_cpu_ms.get(raw.current_test) if raw.current_test is not None else None
    spent = f" ({used / 1000:.2f} s of CPU" if used else ""
    if spent and plan.compiles:
        spent += ", JAX compilation included"
    spent += ")" if spent else ""
    return f"CPU time limit of {limit_s:g} s exceeded{spent}", "cpu"


def charge_time(tests: list[TestResult], plan: RunPlan) -> None:
    """The tests' time, charged once their frames have said how much of it was JAX
    compilation: a test's CPU less its compilation against the time limit, all compilation
    against the submission's compile budget. The compile times come from the sandbox (forged,
    they can only spend the budget), and never count for more than the test's CPU."""
    limit_ms, budget_ms = plan.time_ms, plan.compile_budget_ms
    spent = 0.0
    over_budget = False
    for t in tests:
        if t.verdict is None or t.verdict in (Verdict.TLE, Verdict.MLE):
            continue
        compiled = max(t.compile_ms or 0.0, 0.0)
        if t.cpu_ms is not None:
            compiled = min(compiled, t.cpu_ms)
        spent += compiled
        if t.cpu_ms is not None and t.cpu_ms - compiled > limit_ms:
            of_which = (f", of which {compiled / 1000:.2f} s JAX compilation (charged to the "
                        "compile budget)") if compiled else ""
            t.verdict, t.limit = Verdict.TLE, "cpu"
            t.message = (f"CPU time limit of {limit_ms / 1000:g} s exceeded: "
                         f"{t.cpu_ms / 1000:.2f} s of CPU{of_which}")
        elif spent > budget_ms and not over_budget:
            over_budget = True
            t.verdict, t.limit = Verdict.TLE, "compile_budget"
            t.message = (f"compile budget of {budget_ms / 1000:g} s exceeded: JAX compilation "
                         f"in the tests up to this one took {spent / 1000:.1f} s")


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
        judged.cpu_ms = _test_cpu_ms(raw.test_cpu_ms.get(i), frame.header.get("cpu_ms"))
        tests[i] = judged
        if frame.ev == "error":
            first_traceback = first_traceback or str(frame.header.get("message", ""))

    charge_time(tests, plan)
    if not raw.done or raw.ole:
        verdict, why, limit = _fatal(raw, plan)
        pending = [t for t in tests if t.verdict is None]
        cur = raw.current_test
        target = tests[cur] if isinstance(cur, int) and 0 <= cur < len(tests) else None
        if target is None or target.verdict is not None:
            target = pending[0] if pending else (tests[-1] if tests else None)
        if target is not None:
            target.verdict, target.message, target.limit = verdict, why, limit
            if verdict is Verdict.TLE:
                target.time_ms = float(plan.time_ms)
            if target.cpu_ms is None and cur is not None:
                target.cpu_ms = raw.test_cpu_ms.get(cur)
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
    timed_out = next((t for t in tests if t.limit is not None), None)
    return finish(message=timed_out.message if timed_out else first_traceback)


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
        if prepared.tests[i].redraw is not None and i < len(prepared.trees):
            redrawn_tree(t, prepared.trees[i])
        return t
    if frame.ev == "error":
        # The exception itself, as the runner gave it apart; else the traceback's last line.
        exc = frame.header.get("exception")
        tb = str(frame.header.get("message", ""))
        if isinstance(exc, str) and exc.strip():
            last = exc.strip()
        else:
            last = tb.strip().splitlines()[-1] if tb.strip() else "exception"
        if OUT_OF_MEMORY.search(last):
            return TestResult(name, Verdict.MLE, time_ms=time_ms, limit="memory",
                              message=f"memory limit exceeded: an allocation failed ({last})")
        return TestResult(name, Verdict.RE, time_ms=time_ms, message=last)
    return TestResult(name, Verdict.WA, time_ms=time_ms, shape=_shape(frame.header.get("shape")),
                      message=str(frame.header.get("message", "bad output")))


REDRAWN = ("This test runs your model with every parameter drawn by the judge instead of by "
           "its initialisers, as trained weights would be (the reference runs the same way): ")


def redrawn_tree(t: TestResult, want: Tree | None) -> None:
    """On a test that redraws the parameters, the model must have the statement's parameters:
    a tree that differs from the reference's (a leaf missing, extra, renamed, of another shape)
    is a Wrong Answer that says how, whatever the numbers; a model that made no Flax
    parameters at all had none redrawn, and its wrong numbers are explained so."""
    if t.verdict not in (Verdict.AC, Verdict.WA) or want is None:
        return
    if t.variables is None:
        if t.verdict is Verdict.WA:
            t.message = (REDRAWN + "your function created no Flax parameters (no "
                         "`Module.init`), so none of them were. " + (t.message or ""))
        return
    found = explain(t.variables, want)
    if found is None:
        return
    title, detail = found
    t.verdict = Verdict.WA
    t.message = f"{REDRAWN}your parameters differ from the statement's. {title}: {detail}"


def _test_cpu_ms(host: float | None, claim: object) -> float | None:
    """A test's CPU time: the host's reading of the sandbox's clock, or the runner's own
    (its process's) where that is more. The host sees frames only when it reads them, so a
    short test's `begin` and result can come in one read; a claim can only add to the charge.
    Without a CPU clock on the host, there is no CPU time to charge."""
    if host is None:
        return None
    runner = _float(claim)
    return max(host, runner) if runner is not None and runner == runner else host


def _float(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) else None


def _shape(x: object) -> list[int] | None:
    if isinstance(x, list) and all(isinstance(v, int) for v in x):
        return x
    return None
