"""Judging one submission in several prepared sandboxes at once, when the pool has them idle.

The tests are cut into contiguous parts; each part runs in its own fresh sandbox (the module is
executed in each), is interpreted on its own, and the parts' test results are put back in
order under the single aggregation rule. A verdict does not depend on the cut: a part that
ends early (time, memory) leaves its later tests unrun exactly as one sandbox would, and the
worst verdict wins either way; the output limit holds for the parts' total. Only the latency
changes: on an idle multi-core worker a submission takes about 1/k of the time. Submissions that
compile their own code are not cut (each part would compile it again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from judge import wire
from judge.interpret import charge_time, interpret
from judge.package import Tolerance
from judge.prepared import PreparedTests
from judge.sandbox.base import Started
from judge.sandbox.io_loop import OutputTally, RunPlan
from judge.sandbox.job import Job, Kind
from judge.sandbox.pool import SandboxPool
from judge.verdicts import JudgeResult, Verdict, aggregate

# Fewer tests than this are not worth a second sandbox: each part pays the module's start, and
# a NumPy or PyTorch test takes a millisecond or two.
MIN_TESTS_TO_SPLIT = 6
# Eager JAX dispatches every operation from Python: a Flax block's test takes tens of
# milliseconds, so even a Run's few sample tests finish sooner in two sandboxes.
MIN_JAX_TESTS_TO_SPLIT = 2


def min_tests_to_split(kind: Kind) -> int:
    return MIN_JAX_TESTS_TO_SPLIT if kind.uses_jax else MIN_TESTS_TO_SPLIT


def idle_sandboxes(sandbox: SandboxPool, job: Job, n_tests: int) -> list[Started] | None:
    """Two prepared sandboxes for one submission, when the pool has them idle and nothing
    else is judging, and the submission is worth cutting (one that compiles its own code is
    not: each part would compile the same functions again, on the same cores); None
    otherwise."""
    if n_tests < min_tests_to_split(job.kind) or job.compiles_itself:
        return None
    return sandbox.acquire_idle(job.kind, 2)


def cut(n: int, parts: int) -> list[tuple[int, int]]:
    """Contiguous [start, end) ranges, sizes differing by at most one."""
    size, extra = divmod(n, parts)
    out, start = [], 0
    for k in range(parts):
        end = start + size + (1 if k < extra else 0)
        out.append((start, end))
        start = end
    return out


def _shifted(on_frame: Callable[[wire.Frame], None] | None,
             offset: int) -> Callable[[wire.Frame], None] | None:
    """A part's frames count its tests from 0: report them under their place in the whole."""
    if on_frame is None or offset == 0:
        return on_frame

    def forward(frame: wire.Frame) -> None:
        i = frame.header.get("test")
        if type(i) is int:
            on_frame(wire.Frame({**frame.header, "test": i + offset}, frame.data))

    return forward


def judge_in_parts(sandbox: SandboxPool, sandboxes: list[Started], job: Job,
                   prepared: PreparedTests, plan: RunPlan, tol: Tolerance) -> JudgeResult:
    ranges = cut(len(prepared.tests), len(sandboxes))
    results: list[JudgeResult | None] = [None] * len(ranges)
    errors: list[BaseException] = []
    tally = OutputTally()

    def run(k: int) -> None:
        a, b = ranges[k]
        part = replace(prepared, tests=prepared.tests[a:b], args=prepared.args[a:b],
                       shapes=prepared.shapes[a:b], expected=prepared.expected[a:b])
        # The compile budget is the submission's, whichever part its tests ran in: each part
        # may spend all of it live, and the merged tests are charged against it in order.
        part_plan = replace(plan, expected_sizes=plan.expected_sizes[a:b],
                            redraws=plan.redraws[a:b],
                            on_frame=_shifted(plan.on_frame, a), shared_output=tally)
        try:
            raw = sandbox.execute(sandboxes[k], job, part.args, part_plan)
            results[k] = interpret(raw, part, tol, part_plan)
        except BaseException as e:  # noqa: BLE001 - reported as the judge's fault below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,), name=f"tj-part-{k}")
               for k in range(1, len(ranges))]
    for t in threads:
        t.start()
    run(0)
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return merge([r for r in results if r is not None], plan)


def merge(parts: list[JudgeResult], plan: RunPlan | None = None) -> JudgeResult:
    """The parts' results as one sandbox's would be; with `plan`, the tests charged against
    its compile budget together, in order (interpret.charge_time), as in one sandbox."""
    tests = [t for p in parts for t in p.tests]
    if plan is not None:
        charge_time(tests, plan)
    stdout = "".join(p.stdout for p in parts)
    stderr = "".join(p.stderr for p in parts)

    def first(verdict: Verdict) -> JudgeResult | None:
        return next((p for p in parts if p.verdict is verdict), None)

    if (p := first(Verdict.IE)) is not None:
        res = aggregate(tests, stdout=stdout, stderr=stderr, internal_error=p.message or "")
    elif (p := first(Verdict.CE)) is not None:
        res = aggregate(tests, stdout=stdout, stderr=stderr, compile_error=p.message or "")
    else:
        message = next((p.message for p in parts if p.message), None)
        res = aggregate(tests, stdout=stdout, stderr=stderr, message=message)
    res.parts = len(parts)
    starts = [p.startup_ms for p in parts if p.startup_ms is not None]
    res.startup_ms = max(starts) if starts else None
    return res
