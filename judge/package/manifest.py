"""The manifest's models: `problem.toml` (tolerance, limits, tests, size mix-ups, probes) and the
entries of `submissions/wrong_answer/mistakes.toml`, each field checked with a reason."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

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


class Limits(BaseModel):
    """What a submission may spend (docs/judging.md, "Limits")."""

    model_config = ConfigDict(extra="forbid")
    time_ms: int = Field(5000, ge=100, le=120_000,
                         description="CPU time per test, JAX compilation not included")
    compile_budget_ms: int = Field(
        60_000, ge=0, le=600_000,
        description="JAX compilation inside the submission's function, all tests together")
    memory_mb: int = Field(1536, ge=256, le=16_384, description="the whole sandbox")
    output_kb: int = Field(64, ge=1, le=4096, description="stdout + stderr kept")


class TestSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    kind: Literal["sample", "hidden"]
    seed: int = Field(ge=0, lt=2**32)
    description: str = ""
    params: dict[str, int | float | bool | str] = Field(default_factory=dict)


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


class Mutants(BaseModel):
    """`[mutants]`: what the mutation report needs to know of the problem."""

    model_config = ConfigDict(extra="forbid")
    accepted: list[AcceptedMutant] = Field(default_factory=list)

    @field_validator("accepted")
    @classmethod
    def _once(cls, v: list[AcceptedMutant]) -> list[AcceptedMutant]:
        ids = [a.id for a in v]
        for dup in sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"mutant {dup} is accepted twice")
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

    @field_validator("title")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if "\n" in v or v != v.strip():
            raise ValueError("one line, no surrounding spaces")
        return v
