"""The manifest's models: `problem.toml` (tolerance, limits, tests, size mix-ups, probes) and the
entries of `submissions/wrong_answer/mistakes.toml`, each field checked with a reason."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.package.location import Location

FRAMEWORKS = ("numpy", "jax", "flax", "torch")
SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _matching(pattern: re.Pattern[str], why: str) -> AfterValidator:
    def check(v: str) -> str:
        if not pattern.match(v):
            raise ValueError(why)
        return v

    return AfterValidator(check)


Slug = Annotated[str, _matching(SLUG_RE, "lowercase letters, digits and single hyphens only")]
Identifier = Annotated[str, _matching(IDENT_RE, "must be a Python identifier")]


class Tolerance(BaseModel):
    """An output passes when `|got - want| <= atol + rtol * |want|` elementwise."""

    # The one tolerance type: the manifest's, the comparison's (judge/compare.py) and the API's
    # (a response always carries both bounds: required in the schema of what is served).
    # Frozen: one problem version's tolerance is shared by every judgement of it.
    model_config = ConfigDict(extra="forbid", frozen=True,
                              json_schema_serialization_defaults_required=True)
    atol: float = Field(default=1e-4, ge=0, le=1)
    rtol: float = Field(default=1e-4, ge=0, le=1)


# What a limit the problem leaves to calibration is when nothing is measured, and the least
# it can be: a calibrated limit is never below it (a problem whose accepted submissions take a
# few milliseconds still gives a learner's slower loop, or a JAX solution, room).
DEFAULT_TIME_MS = 5000
DEFAULT_COMPILE_BUDGET_MS = 60_000


class Limits(BaseModel):
    """What a submission may spend (docs/judging.md, "Limits"). `time_ms` and
    `compile_budget_ms` are fixed by the problem when given; when left out, they are
    calibrated: `multiple` times the slowest accepted submission's figure, as measured by
    `tensorjudge problems calibrate` (calibration.toml), and never below the default."""

    model_config = ConfigDict(extra="forbid")
    time_ms: int | None = Field(None, ge=100, le=120_000,
                                description="CPU time per test, JAX compilation not included")
    compile_budget_ms: int | None = Field(
        None, ge=0, le=600_000,
        description="JAX compilation inside the submission's function, all tests together")
    memory_mb: int = Field(1536, ge=256, le=16_384, description="the whole sandbox")
    output_kb: int = Field(64, ge=1, le=4096, description="stdout + stderr kept")
    multiple: float = Field(3.0, ge=1.5, le=20.0, description=(
        "a limit is at least this many times the slowest accepted submission's figure: a "
        "calibrated one is set so, a fixed one is checked so by validation"))


class Redraw(BaseModel):
    """A test that runs a Flax model with every parameter drawn by the judge instead of by its
    initialisers (judge/portable/flax_redraw.py): as trained weights would be, biases and
    LayerNorm scales and offsets included. The reference runs the same way."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    gain: float = Field(1.0, gt=0, le=64, description=(
        "a kernel's deviation times the square root of its first axis's size"))
    bias: float = Field(0.5, ge=0, le=16, description="the deviation of biases and offsets")
    scale: float = Field(0.5, ge=0, lt=1, description=(
        "LayerNorm scales are uniform in [1 - scale, 1 + scale]"))
    gains: dict[str, float] = Field(default_factory=dict, description=(
        "a factor on the kernels and biases of the submodules of these names (a sub-layer "
        "drawn small, say, so that the residual stream after it stays small)"))

    @field_validator("gains")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        for name, factor in v.items():
            if not IDENT_RE.match(name) or not 0 < factor <= 64:
                raise ValueError(f"gains: {name!r} = {factor}: a module name and a factor in "
                                 "(0, 64]")
        return v


class TestSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    kind: Literal["sample", "hidden"]
    seed: int = Field(ge=0, lt=2**32)
    description: str = ""
    params: dict[str, int | float | bool | str] = Field(default_factory=dict)
    redraw: Redraw | None = Field(default=None, description=(
        "run the Flax model with parameters drawn by the judge (Flax problems only)"))


class SizeMixup(BaseModel):
    """What it means when a submission fails with an error exactly on the tests where two
    sizes differ (and runs where they are equal): one is used for the other. Read by the
    error diagnosis (judge/diagnosis/size_mixups.py)."""

    model_config = ConfigDict(extra="forbid")
    sizes: tuple[str, str] = Field(description="two integer test parameters")
    title: str = Field(min_length=1, max_length=120)
    detail: str = Field(min_length=1)


class Probe(BaseModel):
    """A property of the task, checked after a wrong answer by running the submission on
    inputs derived from a failed test's (judge/diagnosis/probes.py): no expected output needed."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["causal", "padding", "batch", "permutation"]
    inputs: list[str] = Field(min_length=1, description="arguments changed together")
    axis: int = Field(ge=0, le=8, description="their axis that is changed or reordered")
    output_axis: int = Field(0, ge=0, le=8, description="the output's matching axis")
    mask: str | None = Field(None, description="padding: the argument marking real positions")
    sites: list[str] = Field(default_factory=list, description=(
        "the reference's site labels where a broken relation points ([] anywhere): a finding "
        "that contradicts the mistake's location is not shown"))

    @model_validator(mode="after")
    def _mask_for_padding(self) -> Probe:
        if (self.kind == "padding") != (self.mask is not None):
            raise ValueError("`mask` is required for padding probes and only for them")
        return self


class AcceptedMutant(BaseModel):
    """A mutant of the reference the tests are allowed not to kill, and why (the mutation
    report, judge/mutants/report.py: validation fails while one survives unaccepted)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[0-9a-f]{16}$", description="the mutant's id in the report")
    title: str = Field("", max_length=160, description="its title, for the reader of the file")
    reason: str = Field(min_length=1, description="why no test need kill it")


class EquivalentMutant(AcceptedMutant):
    """A mutant that computes the reference's function for every value of its parameters and
    inputs, and why (`reason`): the mutation report finds it equivalent by running it, and
    validation asks every equivalent mutant to say why, so that none is equivalent only at
    the values the tests happen to use."""


class Mutants(BaseModel):
    """`[mutants]`: what the mutation report needs to know of the problem."""

    model_config = ConfigDict(extra="forbid")
    accepted: list[AcceptedMutant] = Field(default_factory=list)
    equivalent: list[EquivalentMutant] = Field(default_factory=list)

    @field_validator("accepted", "equivalent")
    @classmethod
    def _once(cls, v: list[AcceptedMutant]) -> list[AcceptedMutant]:
        ids = [a.id for a in v]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"mutant {dup} is declared twice")
        return v


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    slug: Slug
    title: str = Field(min_length=1, max_length=120)
    difficulty: Literal["easy", "medium", "hard"]
    tags: list[str] = Field(default_factory=list)
    entry_point: Identifier
    signature: str = Field(min_length=1)
    frameworks: list[Literal["numpy", "jax", "flax", "torch"]] = Field(min_length=1)
    reference: str
    tolerance: Tolerance = Field(default_factory=Tolerance)
    limits: Limits = Field(default_factory=Limits)  # type: ignore[arg-type]
    tests: list[TestSpec] = Field(min_length=1)
    size_mixups: list[SizeMixup] = Field(default_factory=list)
    probes: list[Probe] = Field(default_factory=list)
    mutants: Mutants = Field(default_factory=Mutants)
    location: Location | None = None

    @model_validator(mode="after")
    def _modules_for_flax(self) -> Manifest:
        if self.location is not None and "flax" not in self.frameworks and any(
                p.startswith("module:") for s in self.location.sublayers for p in s.off):
            raise ValueError("location: `module:` switches a Flax submodule off: only for "
                             "problems whose frameworks include flax")
        return self

    @model_validator(mode="after")
    def _redraws_for_flax(self) -> Manifest:
        if "flax" not in self.frameworks and any(t.redraw for t in self.tests):
            raise ValueError("tests: `redraw` draws a Flax model's parameters: only for "
                             "problems whose frameworks include flax")
        return self

    @model_validator(mode="after")
    def _mixups_name_sizes(self) -> Manifest:
        for m in self.size_mixups:
            for name in m.sizes:
                if not all(isinstance(t.params.get(name), int)
                           and not isinstance(t.params.get(name), bool) for t in self.tests):
                    raise ValueError(f"size_mixups: {name!r} is not an integer parameter of "
                                     "every test")
        return self


class Mistake(BaseModel):
    """What a packaged wrong answer gets wrong, in words a learner reads when their output
    matches its output (judge/diagnosis/mistakes.py)."""

    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=120, description="one line naming the mistake")
    detail: str = Field(min_length=1, description="what is wrong and how to fix it")
    statement: str = Field(min_length=1, description="where the statement warns about it")
    site: str | None = Field(None, description=(
        "the reference's site label where the mistake sits ('the cross-attention'): the name "
        "is not shown where the diagnosis locates a wrong answer elsewhere"))

    @field_validator("title")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if "\n" in v or v != v.strip():
            raise ValueError("one line, no surrounding spaces")
        return v
