"""Judging a submission: untrusted run in the sandbox first, trusted check on what came back.

Plain data in (a package and source code), a JudgeResult out; no database, no web.
"""

from __future__ import annotations

import contextlib
import logging
import time
import traceback
from collections.abc import Callable
from functools import cache
from importlib import metadata
from typing import Any

import numpy as np

from judge import pysource, wire
from judge.diagnosis.diagnose import Case, diagnose
from judge.diagnosis.notes import structure_notes
from judge.interpret import interpret, test_from_frame
from judge.kinds import job_for, kinds_for
from judge.package import Package
from judge.parallel import idle_sandboxes, judge_in_parts
from judge.prepared import PreparedTests, Preparing, prepare
from judge.sandbox.base import Backend
from judge.sandbox.io_loop import RunPlan
from judge.sandbox.job import Job
from judge.sandbox.pool import SandboxPool
from judge.sandbox.time_limits import WALL_GUARD
from judge.timing import Stopwatch
from judge.trusted.expected import library_versions
from judge.verdicts import JudgeResult, TestResult, Verdict, aggregate

OLE_FACTOR = 16
log = logging.getLogger(__name__)


def fill_compile_cache(package: Package, sandbox: SandboxPool | Backend) -> None:
    """Fill the judge's JAX compilation cache for this problem's warm-ups (once per version;
    a no-op without a cache or for problems without JAX)."""
    pool = SandboxPool.around(sandbox)
    for kind in kinds_for(package):
        pool.fill_compile_cache(kind, package.manifest.limits.memory_mb << 20)


def run_plan(package: Package, expected_sizes: list[int], job: Job | None = None) -> RunPlan:
    """The problem's limits, as a sandbox run of `job` applies them."""
    limits = package.limits
    return RunPlan(time_ms=limits.time_ms.value, memory_bytes=limits.memory_mb << 20,
                   output_cap=limits.output_kb << 10,
                   ole_limit=OLE_FACTOR * (limits.output_kb << 10),
                   expected_sizes=expected_sizes,
                   compile_budget_ms=limits.compile_budget_ms.value,
                   compiles=job is not None and job.kind.uses_jax)


def syntax_error_message(e: SyntaxError, code: str) -> str:
    line = e.lineno or 0
    lines = code.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    where = f"line {line}" + (f", column {e.offset}" if e.offset else "")
    caret = ""
    if text and e.offset:
        caret = "\n    " + " " * (max(e.offset, 1) - 1) + "^"
    return f"SyntaxError: {e.msg} ({where})\n    {text}{caret}".rstrip()


def judge(
    package: Package,
    code: str,
    sandbox: SandboxPool | Backend,
    *,
    samples_only: bool = False,
    on_test: Callable[[int, TestResult], None] | None = None,
    split: bool = True,
    probes: bool = True,
    extra_runs: bool = True,
) -> JudgeResult:
    """Judge `code` against `package`. Faults of the judge itself come back as IE.

    `on_test(index, result)` hears of each test as soon as it is compared (live progress);
    the returned result is the authority. `split`: a pool may judge a Submit in two idle
    sandboxes at once (the caller says no when other submissions are waiting: the second
    sandbox would be taken from them). A result that is not AC carries its diagnosis (with
    `probes`, the package's property probes run too; without `extra_runs`, the submission
    runs no more than the judgement: neither probes nor the location's variants), an
    accepted one its notes (judge/diagnosis/notes.py); every result says what judged it
    (`environment`) and where its time went (`timing`)."""
    t0 = time.monotonic()
    watch = Stopwatch()
    pool = SandboxPool.around(sandbox)
    result = _judge(package, code, pool, samples_only=samples_only, on_test=on_test,
                    split=split, watch=watch)
    watch.judged()
    result.environment = environment(package, pool)
    if result.verdict is Verdict.AC:
        try:
            result.notes = structure_notes(package, prepare(package, samples_only).tests, result)
        except Exception:  # noqa: BLE001 - a note never turns a verdict into an error
            log.exception("noting the structure of a submission to %s failed", package.slug)
    if result.verdict not in (Verdict.AC, Verdict.CE, Verdict.IE):
        t1 = time.monotonic()
        try:
            prepared = prepare(package, samples_only)
            tol = package.manifest.tolerance
            result.diagnosis = diagnose(Case(package, prepared.tests, prepared.expected,
                                             prepared.shapes, result, tol, pool, code,
                                             prepared.args,
                                             _extra_runs(package, code, pool) if extra_runs
                                             else None, probes=probes))
        except Exception:  # noqa: BLE001 - a diagnosis never turns a verdict into an error
            log.exception("diagnosing a submission to %s failed", package.slug)
        result.diagnosis_ms = (time.monotonic() - t1) * 1000.0
        result.wall_ms = (time.monotonic() - t0) * 1000.0
    result.timing = watch.timing(result)
    return result


def _extra_runs(package: Package, code: str, sandbox: SandboxPool
                ) -> Callable[[list[dict], list[int], list[dict | None]], list[np.ndarray | None]]:
    """Runs more argument sets through the submission, in one sandbox job under the
    problem's limits (the diagnosis's probes), each with its redraw of the Flax parameters:
    each set's flat output, None where it gave none."""
    def run(args: list[dict], sizes: list[int], redraws: list[dict | None]
            ) -> list[np.ndarray | None]:
        job = job_for(package, code, pysource.parse(code, filename="solution.py"))
        plan = run_plan(package, sizes, job)
        plan.redraws = redraws
        raw = sandbox.run(sandbox.route(job), args, plan)
        outs: list[np.ndarray | None] = [None] * len(args)
        for frame in raw.frames:
            i = frame.header.get("test")
            if frame.ev == "result" and isinstance(i, int) and 0 <= i < len(outs):
                with contextlib.suppress(wire.WireError):
                    outs[i] = wire.result_array(frame)
        return outs

    return run


def environment(package: Package, sandbox: SandboxPool) -> dict[str, Any]:
    """What judged a submission, for reproducing its verdict."""
    limits = package.limits
    return {
        "problem_version": package.content_hash,
        # The limits it was judged under and how each was set (docs/judging.md, "Limits").
        "limits": {"time_ms": limits.time_ms.value,
                   "compile_budget_ms": limits.compile_budget_ms.value,
                   "memory_mb": limits.memory_mb, "wall_guard": WALL_GUARD,
                   "basis": limits.as_dict()["basis"]},
        "judge_version": judge_version(),
        "libraries": dict(library_versions()),
        "sandbox": sandbox.name,
    }


@cache
def judge_version() -> str:
    try:
        return metadata.version("tensorjudge")
    except metadata.PackageNotFoundError:
        return "unknown"


def _judge(
    package: Package,
    code: str,
    sandbox: SandboxPool,
    *,
    samples_only: bool,
    on_test: Callable[[int, TestResult], None] | None,
    split: bool,
    watch: Stopwatch,
) -> JudgeResult:
    t0 = time.monotonic()
    try:
        # The trusted outputs are computed while the submission runs (prepared.py).
        preparing = Preparing(package, samples_only)
    except Exception as e:  # noqa: BLE001 - any failure here is the judge's
        return aggregate([], internal_error=f"preparing the tests failed: {e}")
    prepared = preparing.inputs
    not_run = [TestResult(t.name, None, message="not run") for t in prepared.tests]
    try:
        tree = pysource.parse(code, filename="solution.py")
    except SyntaxError as e:
        return aggregate(not_run, compile_error=syntax_error_message(e, code))
    except (ValueError, MemoryError, RecursionError) as e:
        return aggregate(not_run, compile_error=f"the file cannot be parsed: {e}")
    job = job_for(package, code, tree)
    plan = run_plan(package, preparing.sizes, job)
    plan.redraws = [t.redraw.model_dump() if t.redraw else None for t in prepared.tests]
    tol = package.manifest.tolerance
    forward: Callable[[wire.Frame], None] | None = None
    if on_test is not None:
        def on_frame(frame: wire.Frame) -> None:
            i = frame.header.get("test")
            full = preparing.ready()  # progress only once the expected outputs are there
            if full is not None and isinstance(i, int) and 0 <= i < len(prepared.tests):
                t = test_from_frame(frame, i, full, tol)
                if t is not None:
                    on_test(i, t)

        forward = on_frame
    plan.on_frame = watch.watching(forward)

    def attempt() -> tuple[JudgeResult, bool]:
        """One judgement: in two idle sandboxes where the pool has them, else in one; and
        whether a time-out in it was met twice already (a warm fork's is run again by the
        sandbox itself)."""
        watch.attempt()
        routed = sandbox.route(job)
        parts = idle_sandboxes(sandbox, routed, len(prepared.tests)) if split else None
        if parts:
            return judge_in_parts(sandbox, parts, routed, outputs(), plan, tol), False
        raw = sandbox.run(routed, prepared.args, plan)
        if raw.rerun_after_timeout:
            watch.met_twice()
        return interpret(raw, outputs(), tol, plan), raw.rerun_after_timeout

    def outputs() -> PreparedTests:
        try:
            return preparing.result()
        except Exception as e:  # noqa: BLE001 - any failure here is the judge's
            raise _PreparationFailed(str(e)) from e

    try:
        result, met_twice = attempt()
        if result.verdict is Verdict.TLE and not met_twice:
            # Time is CPU time where the sandbox has a CPU clock, yet a stalled host can
            # still push a run past its wall guard (or, without the clock, its limit), and
            # CPU time itself varies a little: a time-out stands only when a second run, in
            # fresh sandboxes, meets it too. Its result, whatever it is, is the verdict.
            result, _ = attempt()
            result.runs = 2
            again = " (in a second run too)"
            for t in result.tests:
                if t.verdict is Verdict.TLE and t.message:
                    t.message += again
            if result.verdict is Verdict.TLE and result.message:
                result.message += again
    except _PreparationFailed as e:
        return aggregate([], internal_error=f"preparing the tests failed: {e}")
    except Exception as e:  # noqa: BLE001
        return aggregate(not_run, internal_error=f"the sandbox failed: {e}\n"
                         + traceback.format_exc(limit=3))
    result.wall_ms = (time.monotonic() - t0) * 1000.0
    return result


class _PreparationFailed(RuntimeError):
    """The trusted outputs could not be computed: the judge's fault, said as such."""
