"""A package's calibration (`calibration.toml`): what its accepted submissions spend, as
`tensorjudge problems calibrate` measured it, and the limits that follow from it.

The problemtools way: a limit the problem leaves open is a stated multiple of its slowest
accepted submission's figure, so that no correct solution of the packaged kinds sits near it
(docs/judging.md, "Limits"). The figures are the CPU a test spends outside JAX compilation,
and the CPU JAX compilation takes over all tests of a submission, each the most any run of
the calibration saw. Each accepted file is recorded with its content hash: validation refuses
a calibration that no longer describes the accepted files.
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.package.manifest import DEFAULT_COMPILE_BUDGET_MS, DEFAULT_TIME_MS, Limits

CALIBRATION_FILE = "calibration.toml"


class Measured(BaseModel):
    """One accepted submission's figures, the most of all the calibration's runs."""

    model_config = ConfigDict(extra="forbid")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="of the file measured")
    test_ms: float = Field(ge=0, description="CPU of its slowest test, compilation apart")
    compile_ms: float = Field(ge=0, description="CPU of its JAX compilation, all tests")


class Calibration(BaseModel):
    model_config = ConfigDict(extra="forbid")
    measured_on: str = Field(description="the date of the measurement")
    judge_version: str
    sandbox: str = Field(description="the sandbox backend it ran in")
    runs: int = Field(ge=1, description="judgements of each submission")
    libraries: dict[str, str] = Field(default_factory=dict)
    submissions: dict[str, Measured] = Field(
        default_factory=dict, description="by label: accepted/<file>")

    def slowest(self, figure: str) -> tuple[str, float] | None:
        """The accepted submission with the largest `figure` (test_ms or compile_ms)."""
        if not self.submissions:
            return None
        label = max(self.submissions, key=lambda k: getattr(self.submissions[k], figure))
        return label, float(getattr(self.submissions[label], figure))


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_calibration(package_dir: Path) -> tuple[Calibration | None, str | None]:
    """The package's calibration, or None; and what is wrong with the file, if anything."""
    path = package_dir / CALIBRATION_FILE
    if not path.is_file():
        return None, None
    try:
        return Calibration.model_validate(tomllib.loads(path.read_text(encoding="utf-8"))), None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        return None, f"not valid TOML: {e}"
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, f"{where}: {first['msg']}"


HEADER = ("# What the accepted submissions spend, measured by `tensorjudge problems calibrate`\n"
          "# (docs/judging.md, \"Limits\"). A limit problem.toml leaves out is `multiple` times\n"
          "# the slowest figure here. Written by the command: do not edit by hand.\n")


def write_calibration(package_dir: Path, calibration: Calibration) -> Path:
    path = package_dir / CALIBRATION_FILE
    data = calibration.model_dump(mode="json")
    path.write_text(HEADER + "\n" + tomli_w.dumps(data), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Limit:
    """One limit's value and, in words, how it was set."""

    value: int
    basis: str


@dataclass(frozen=True)
class ResolvedLimits:
    """The limits a submission is judged under, each with how it was set."""

    time_ms: Limit
    compile_budget_ms: Limit
    memory_mb: int
    output_kb: int
    multiple: float

    def as_dict(self) -> dict[str, object]:
        """As results and pages show them: the values, and `basis` in words."""
        return {"time_ms": self.time_ms.value,
                "compile_budget_ms": self.compile_budget_ms.value,
                "memory_mb": self.memory_mb, "output_kb": self.output_kb,
                "basis": {"time_ms": self.time_ms.basis,
                          "compile_budget_ms": self.compile_budget_ms.basis}}


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3g} s" if ms >= 100 else f"{ms:.3g} ms"


def _resolve(fixed: int | None, default: int, multiple: float,
             slowest: tuple[str, float] | None, what: str, step_ms: int) -> Limit:
    if fixed is not None:
        return Limit(fixed, "fixed by the problem")
    if slowest is None:
        return Limit(default, "the judge's default: the problem is not calibrated")
    label, ms = slowest
    want = int(math.ceil(multiple * ms / step_ms) * step_ms)
    measured = f"{multiple:g} × {_seconds(ms)}, the slowest accepted submission's {what} " \
        f"({label})"
    if want <= default:
        return Limit(default, f"the judge's least, more than {measured}")
    return Limit(want, measured)


def resolve_limits(limits: Limits, calibration: Calibration | None) -> ResolvedLimits:
    """Each limit the problem fixes as it is; each it leaves open, `multiple` times the
    calibration's slowest figure, rounded up (to 100 ms per test, to the second for
    compilation), and never below the judge's default."""
    slowest_test = calibration.slowest("test_ms") if calibration else None
    slowest_compile = calibration.slowest("compile_ms") if calibration else None
    return ResolvedLimits(
        time_ms=_resolve(limits.time_ms, DEFAULT_TIME_MS, limits.multiple, slowest_test,
                         "CPU time in a test", 100),
        compile_budget_ms=_resolve(limits.compile_budget_ms, DEFAULT_COMPILE_BUDGET_MS,
                                   limits.multiple, slowest_compile, "JAX compilation", 1000),
        memory_mb=limits.memory_mb, output_kb=limits.output_kb, multiple=limits.multiple)
