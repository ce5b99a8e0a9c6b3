"""The judge: what the service uses of it, by name.

    judge(package, code, sandbox, ...)       judge a submission -> JudgeResult
    validate_package(path, sandbox, ...)     a package proves its own claims -> Report
    calibrate_package(package, sandbox)      its limits measured from its accepted submissions
    mutation_report(package)                 how strong its tests are -> MutationReport
    prepare_ahead(package, pool)             a problem's cache fills and trusted outputs, at set-up
    uses_jax(code)                           whether a submission imports JAX (it may compile)
    parse_source(code)                       Python source parsed safely beside other threads
    prepare_problems(pool, packages, stop)   the start-up work, before the first submission
    Startup(pool, stop)                      the same, giving way to the jobs it is told of
    begin_soon(pool)                         its first step, begun before the workers start
    prepare_tests(package, samples_only)     the selected tests' inputs and expected outputs
    open_sandbox(SandboxConfig(...))         the configured sandbox, pooled or fresh
    and the models: Package, Verdict, JudgeResult...

Each name is imported on first use (PEP 562), so `import judge` costs nothing: the command
line and the pages import the judge without loading NumPy or a sandbox backend. No name here
is also a module of the package (`validate`, `package`...): importing that module would
replace the name.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.calibrate import Spent
    from judge.calibrate import calibrate as calibrate_package
    from judge.engine import fill_compile_cache, judge
    from judge.kinds import uses_jax
    from judge.mutants.render import markdown as markdown_mutation_report
    from judge.mutants.render import render as render_mutation_report
    from judge.mutants.report import MutationReport, mutation_report
    from judge.package import SLUG_RE, Package, PackageError, discover, load_package
    from judge.parallel import cut
    from judge.prepared import PreparedTests
    from judge.prepared import prepare as prepare_tests
    from judge.pysource import parse as parse_source
    from judge.sandbox import (
        PoolFigures,
        SandboxConfig,
        SandboxPool,
        SandboxUnavailable,
        open_sandbox,
    )
    from judge.startup import Prepared, Startup, prepare_ahead, prepare_problems
    from judge.validate import Check, Report
    from judge.validate import validate as validate_package
    from judge.verdicts import (
        VERDICT_WORDS,
        JudgeResult,
        TestResult,
        Timing,
        Verdict,
        aggregate,
    )

# name -> (module, its name there)
_FACE: dict[str, tuple[str, str]] = {
    "judge": ("judge.engine", "judge"),
    "fill_compile_cache": ("judge.engine", "fill_compile_cache"),
    "validate_package": ("judge.validate", "validate"),
    "calibrate_package": ("judge.calibrate", "calibrate"),
    "Spent": ("judge.calibrate", "Spent"),
    "Check": ("judge.validate", "Check"),
    "Report": ("judge.validate", "Report"),
    "mutation_report": ("judge.mutants.report", "mutation_report"),
    "MutationReport": ("judge.mutants.report", "MutationReport"),
    "render_mutation_report": ("judge.mutants.render", "render"),
    "markdown_mutation_report": ("judge.mutants.render", "markdown"),
    "prepare_problems": ("judge.startup", "prepare_problems"),
    "Startup": ("judge.startup", "Startup"),
    "begin_soon": ("judge.startup", "begin_soon"),
    "prepare_ahead": ("judge.startup", "prepare_ahead"),
    "uses_jax": ("judge.kinds", "uses_jax"),
    "parse_source": ("judge.pysource", "parse"),
    "Prepared": ("judge.startup", "Prepared"),
    "prepare_tests": ("judge.prepared", "prepare"),
    "PreparedTests": ("judge.prepared", "PreparedTests"),
    "open_sandbox": ("judge.sandbox", "open_sandbox"),
    "SandboxConfig": ("judge.sandbox", "SandboxConfig"),
    "SandboxUnavailable": ("judge.sandbox", "SandboxUnavailable"),
    "SandboxPool": ("judge.sandbox", "SandboxPool"),
    "PoolFigures": ("judge.sandbox", "PoolFigures"),
    "Package": ("judge.package", "Package"),
    "PackageError": ("judge.package", "PackageError"),
    "load_package": ("judge.package", "load_package"),
    "discover": ("judge.package", "discover"),
    "SLUG_RE": ("judge.package", "SLUG_RE"),
    "Verdict": ("judge.verdicts", "Verdict"),
    "VERDICT_WORDS": ("judge.verdicts", "VERDICT_WORDS"),
    "JudgeResult": ("judge.verdicts", "JudgeResult"),
    "TestResult": ("judge.verdicts", "TestResult"),
    "Timing": ("judge.verdicts", "Timing"),
    "aggregate": ("judge.verdicts", "aggregate"),
    "cut": ("judge.parallel", "cut"),
}

__all__ = ["judge", "fill_compile_cache", "validate_package", "calibrate_package", "Spent",
           "Check", "Report",
           "mutation_report", "MutationReport", "render_mutation_report",
           "markdown_mutation_report",
           "prepare_problems", "Startup", "begin_soon", "prepare_ahead", "Prepared",
           "prepare_tests", "PreparedTests", "open_sandbox", "uses_jax", "parse_source",
           "SandboxConfig", "SandboxUnavailable", "SandboxPool", "PoolFigures", "Package",
           "PackageError", "load_package", "discover", "SLUG_RE", "Verdict", "VERDICT_WORDS",
           "JudgeResult", "TestResult", "Timing", "aggregate", "cut"]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _FACE[name]
    except KeyError:
        raise AttributeError(f"module 'judge' has no attribute {name!r}") from None
    value = getattr(import_module(module), attr)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_FACE})
