"""Judging a submission: untrusted run in the sandbox first, trusted check on what came back.

Plain data in (a package and source code), a JudgeResult out; no database, no web.
"""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import time
import traceback
from collections.abc import Callable
from functools import cache
from importlib import metadata
from typing import Any, Protocol

import numpy as np

from judge import pysource, wire
from judge.compare import Tolerance
from judge.diagnosis import Case, diagnose
from judge.expected import library_versions
from judge.interpret import interpret, test_from_frame
from judge.package import Package
from judge.parallel import compiles_itself, idle_sandboxes, judge_in_parts
from judge.prepared import prepare
from judge.sandbox.base import EAGER_JAX, self_prepared
from judge.sandbox.io_loop import RawRun, RunPlan
from judge.verdicts import JudgeResult, TestResult, Verdict, aggregate

# What a sandbox imports before the job, by the frameworks a submission imports. Canonical
# sets, so that submissions share pools of prepared sandboxes.
FAMILIES: dict[str, tuple[str, ...]] = {
    "numpy": (),
    "jax": ("jax",),
    "flax": ("jax", "flax.linen"),
    "torch": ("torch",),
}
OLE_FACTOR = 16
log = logging.getLogger(__name__)


class Sandbox(Protocol):
    def run(self, header: dict, tests_args: list[dict], plan: RunPlan) -> RawRun: ...


def imported_frameworks(tree: ast.AST) -> list[str]:
    """The modules to import ahead for a submission, from its own import statements; with
    EAGER_JAX among them when it uses JAX without compiling its own code."""
    tops: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    preload = preload_for(sorted(tops & set(FAMILIES)))
    if "jax" in tops and "flax" not in tops and not compiles_itself(tree):
        preload = sorted([*preload, EAGER_JAX])
    return preload


def preload_for(frameworks: list[str]) -> list[str]:
    out: list[str] = []
    for fw in sorted(frameworks):
        for mod in FAMILIES.get(fw, ()):
            if mod not in out:
                out.append(mod)
    return sorted(out)


def warmup_cases(package: Package) -> list[dict]:
    """The distinct shapes of every test's inputs (arrays as dtype and shape, numbers as they
    are): what the judge's warm-up compiles for. Never values, never expected outputs."""
    cached = _WARMUP_CASES.get(package.content_hash)
    if cached is not None:
        return cached
    gen = package.generator
    seen: dict[str, dict] = {}
    for t in package.tests:
        case = _shape_only(gen.generate(t.seed, **t.params))
        assert isinstance(case, dict)
        seen.setdefault(json.dumps(case, sort_keys=True), case)
    cases = list(seen.values())
    _WARMUP_CASES[package.content_hash] = cases
    return cases


_WARMUP_CASES: dict[str, list[dict]] = {}


def _shape_only(value: object) -> object:
    if isinstance(value, np.ndarray):
        return {"dtype": value.dtype.name, "shape": list(value.shape)}
    if isinstance(value, dict):
        return {k: _shape_only(v) for k, v in value.items() if k not in _VALUE_ARGS}
    if isinstance(value, np.generic):
        return value.item()
    return value


# Arguments whose values are data, not structure (a seed decides a parameter draw).
_VALUE_ARGS = {"seed"}


def pool_headers(package: Package) -> list[dict]:
    """One sandbox header (without code) per framework family the problem allows: what a
    pool prepares ahead for it, cheapest first."""
    order = ["numpy", "torch", "jax", "flax"]
    fws = sorted(set(package.manifest.frameworks), key=order.index)
    headers = [sandbox_header(package, "", preload_for([fw])) for fw in fws]
    if "jax" in fws:
        headers.append(sandbox_header(package, "", sorted([*preload_for(["jax"]), EAGER_JAX])))
    return headers


def fill_compile_cache(package: Package, sandbox: object) -> None:
    """Fill the judge's JAX compilation cache for this problem's warm-ups (once per version;
    a no-op without a cache or for problems without JAX)."""
    inner = getattr(sandbox, "sandbox", sandbox)
    fill = getattr(inner, "fill_compile_cache", None)
    if fill is None:
        return
    for header in pool_headers(package):
        fill(header, package.manifest.limits.memory_mb << 20)


def sandbox_header(package: Package, code: str, preload: list[str]) -> dict:
    """What the sandbox needs before and with the job. Judge-owned except `code`."""
    header: dict = {"code": code, "entry": package.entry_point, "preload": preload}
    if package.warmup_source and preload:
        header["warmup"] = {"source": package.warmup_source, "cases": warmup_cases(package),
                            "key": package.content_hash}
    return header


def submission_header(package: Package, code: str, tree: ast.AST) -> dict:
    """The header for this submission's sandbox. One that compiles its own code (jax.jit...)
    is not forked from a warmed server: it would only be handed back at its first
    compilation (judge/sandbox/runner.py)."""
    header = sandbox_header(package, code, imported_frameworks(tree))
    return self_prepared(header) if compiles_itself(tree) else header


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
    sandbox: Sandbox,
    *,
    samples_only: bool = False,
    on_test: Callable[[int, TestResult], None] | None = None,
    split: bool = True,
    probes: bool = True,
) -> JudgeResult:
    """Judge `code` against `package`. Faults of the judge itself come back as IE.

    `on_test(index, result)` hears of each test as soon as it is compared (live progress);
    the returned result is the authority. `split`: a pool may judge a Submit in two idle
    sandboxes at once (the caller says no when other submissions are waiting: the second
    sandbox would be taken from them). A result that is not AC carries its diagnosis (with
    `probes`, the package's property probes run the submission once more); every result
    says what judged it (`environment`)."""
    t0 = time.monotonic()
    result = _judge(package, code, sandbox, samples_only=samples_only, on_test=on_test,
                    split=split)
    result.environment = environment(package, sandbox)
    if result.verdict not in (Verdict.AC, Verdict.CE, Verdict.IE):
        t1 = time.monotonic()
        try:
            prepared = prepare(package, samples_only)
            tol = Tolerance(package.manifest.tolerance.atol, package.manifest.tolerance.rtol)
            result.diagnosis = diagnose(Case(package, prepared.tests, prepared.expected,
                                             prepared.shapes, result, tol, sandbox, code,
                                             prepared.args,
                                             _extra_runs(package, code, sandbox) if probes
                                             else None))
        except Exception:  # noqa: BLE001 - a diagnosis never turns a verdict into an error
            log.exception("diagnosing a submission to %s failed", package.slug)
        result.diagnosis_ms = (time.monotonic() - t1) * 1000.0
        result.wall_ms = (time.monotonic() - t0) * 1000.0
    return result


def _extra_runs(package: Package, code: str,
                sandbox: Sandbox) -> Callable[[list[dict], list[int]], list[np.ndarray | None]]:
    """Runs more argument sets through the submission, in one sandbox job under the
    problem's limits (the diagnosis's probes): each set's flat output, None where it gave
    none."""
    def run(args: list[dict], sizes: list[int]) -> list[np.ndarray | None]:
        limits = package.manifest.limits
        plan = RunPlan(time_ms=limits.time_ms, memory_bytes=limits.memory_mb << 20,
                       output_cap=limits.output_kb << 10,
                       ole_limit=OLE_FACTOR * (limits.output_kb << 10), expected_sizes=sizes)
        header = submission_header(package, code, pysource.parse(code, filename="solution.py"))
        raw = sandbox.run(header, args, plan)
        outs: list[np.ndarray | None] = [None] * len(args)
        for frame in raw.frames:
            i = frame.header.get("test")
            if frame.ev == "result" and isinstance(i, int) and 0 <= i < len(outs):
                with contextlib.suppress(wire.WireError):
                    outs[i] = wire.result_array(frame)
        return outs

    return run


def environment(package: Package, sandbox: object) -> dict[str, Any]:
    """What judged a submission, for reproducing its verdict."""
    return {
        "problem_version": package.content_hash,
        "judge_version": judge_version(),
        "libraries": dict(library_versions()),
        "sandbox": str(getattr(sandbox, "kind", "bwrap")),
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
    sandbox: Sandbox,
    *,
    samples_only: bool,
    on_test: Callable[[int, TestResult], None] | None,
    split: bool,
) -> JudgeResult:
    t0 = time.monotonic()
    try:
        prepared = prepare(package, samples_only)
    except Exception as e:  # noqa: BLE001 - any failure here is the judge's
        return aggregate([], internal_error=f"preparing the tests failed: {e}")
    not_run = [TestResult(t.name, None, message="not run") for t in prepared.tests]
    try:
        tree = pysource.parse(code, filename="solution.py")
    except SyntaxError as e:
        return aggregate(not_run, compile_error=syntax_error_message(e, code))
    except (ValueError, MemoryError, RecursionError) as e:
        return aggregate(not_run, compile_error=f"the file cannot be parsed: {e}")
    limits = package.manifest.limits
    plan = RunPlan(
        time_ms=limits.time_ms,
        memory_bytes=limits.memory_mb << 20,
        output_cap=limits.output_kb << 10,
        ole_limit=OLE_FACTOR * (limits.output_kb << 10),
        expected_sizes=[int(e.size) for e in prepared.expected],
    )
    header = submission_header(package, code, tree)
    tol = Tolerance(package.manifest.tolerance.atol, package.manifest.tolerance.rtol)
    if on_test is not None:
        def on_frame(frame: wire.Frame) -> None:
            i = frame.header.get("test")
            if isinstance(i, int) and 0 <= i < len(prepared.tests):
                t = test_from_frame(frame, i, prepared, tol)
                if t is not None:
                    on_test(i, t)

        plan.on_frame = on_frame

    def attempt() -> tuple[JudgeResult, bool]:
        """One judgement: in two idle sandboxes where the pool has them, else in one; and
        whether a time-out in it was met twice already (a warm fork's is run again by the
        sandbox itself)."""
        parts = idle_sandboxes(sandbox, header, plan, tree, len(prepared.tests)) if split else None
        if parts:
            return judge_in_parts(sandbox, parts, header, prepared, plan,  # type: ignore[arg-type]
                                  tol), False
        raw = sandbox.run(header, prepared.args, plan)
        return interpret(raw, prepared, tol, plan), raw.rerun_after_timeout

    try:
        result, met_twice = attempt()
        if result.verdict is Verdict.TLE and not met_twice:
            # Time is measured on the clock, and a busy or stalled host can push a run past
            # its limit: a time-out stands only when a second run, in fresh sandboxes, meets
            # it too. Its result, whatever it is, is the verdict.
            result, _ = attempt()
            result.runs = 2
            again = " (in a second run too)"
            for t in result.tests:
                if t.verdict is Verdict.TLE and t.message:
                    t.message += again
            if result.verdict is Verdict.TLE and result.message:
                result.message += again
    except Exception as e:  # noqa: BLE001
        return aggregate(not_run, internal_error=f"the sandbox failed: {e}\n"
                         + traceback.format_exc(limit=3))
    result.wall_ms = (time.monotonic() - t0) * 1000.0
    return result
