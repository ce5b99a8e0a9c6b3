"""Request and response bodies (they also make the OpenAPI document)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judge.package import Tolerance


class Open(BaseModel):
    """Responses may carry more fields than documented (API.md: add fields freely)."""

    model_config = ConfigDict(extra="allow")


class Credentials(BaseModel):
    username: str = Field(max_length=200)
    password: str = Field(max_length=1000)


class UserOut(Open):
    id: int
    username: str


class MeOut(UserOut):
    is_admin: bool


class TokenOut(Open):
    token: str
    token_type: Literal["bearer"] = "bearer"


class ProblemSummary(Open):
    slug: str
    title: str
    difficulty: str
    entry_point: str
    signature: str
    tags: list[str]
    frameworks: list[str]
    version: int


class ProblemOut(ProblemSummary):
    statement: str
    starter: str | None
    starters: dict[str, str] = Field(
        default_factory=dict, description="framework → its starter code, in the order of "
        "`frameworks` (`starter` is the first one's)")
    tolerance: Tolerance
    limits: dict[str, Any]
    samples: list[dict[str, Any]]


class SubmissionIn(BaseModel):
    problem: str = Field(max_length=64)
    code: str
    mode: Literal["submit", "run"] = "submit"


class Queued(Open):
    id: int
    status: Literal["queued"] = "queued"


class SubmissionSummary(Open):
    id: int
    problem: str
    mode: Literal["submit", "run"]
    status: Literal["queued", "running", "done"]
    verdict: str | None
    created_at: str
    finished_at: str | None
    score: dict[str, int] | None = None


class PartOut(Open):
    """One sub-layer of the block, as a location finding draws it."""

    name: str
    title: str = Field(description="as the text names it: 'the cross-attention'")
    agrees: bool | None = Field(description="whether it computes what the reference's does "
                                "(null: not told apart)")


class FindingOut(Open):
    """What a wrong submission most likely got wrong. Findings never change a verdict."""

    kind: Literal["location", "known-mistake", "parameters", "property", "numeric",
                  "error"] = Field(
        description="which mechanism found it: location (the sub-layer the mistake is in, "
        "found by switching sub-layers off in the submission and the reference alike), "
        "known-mistake (the output matches a packaged "
        "wrong answer's), parameters (the Flax parameter tree differs from the reference's), "
        "property (a property probe failed), numeric (overflow, NaN, a scale factor, a "
        "transpose) or error (what a runtime error most likely means)")
    title: str = Field(description="one line naming the mistake in plain words")
    detail: str = Field(description="what to change, and where the statement warns about it")
    tests: list[str] = Field(description="names of the tests it explains")
    parts: list[PartOut] = Field(default_factory=list, description=(
        "location: the block's sub-layers in the order the stream meets them, then what is "
        "left with all of them off (`rest`)"))


class NoteOut(Open):
    """A fact an accepted result does not depend on. Notes never change a verdict."""

    kind: Literal["structure"] = Field(
        description="structure: the submission's parameters differ from the asked-for ones "
        "where the tests cannot see it (a Flax model without biases, say)")
    title: str = Field(description="one line saying what differs")
    detail: str = Field(description="what differs, and why the tests cannot see it")


class EnvironmentOut(Open):
    """What judged a result, to reproduce it."""

    # Optional only so that results recorded by other means (or before) still validate; the
    # engine always fills all four.
    problem_version: str | None = Field(None, description="content hash of the problem package")
    judge_version: str | None = Field(None, description="version of the tensorjudge package")
    libraries: dict[str, str] = Field(default_factory=dict,
                                      description="versions of the numeric libraries")
    sandbox: str | None = Field(None, description="the sandbox backend, e.g. bwrap or docker")


class TimingOut(Open):
    """Where a judgement's time went, in milliseconds: the parts add up to `total_ms`."""

    queue_ms: float | None = Field(
        None, description="from being queued (submitted or rejudged) to a worker's claim; "
        "null when judged outside the queue")
    preparation_ms: float = Field(
        description="the tests' expected outputs, getting a sandbox, its start-up and "
        "warm-up, the submission's module up to its first test")
    tests_ms: float = Field(description="the tests' own time (the sum of their `time_ms`), "
                            "compilation apart; of the part that took longest when the "
                            "tests ran in two sandboxes at once")
    compile_ms: float = Field(description="JAX compilation inside the submission's function "
                              "(the sum of the tests' `compile_ms`)")
    diagnosis_ms: float = Field(description="naming the mistake, after the verdict")
    rerun_ms: float = Field(description="the run that met a time-out and was repeated")
    other_ms: float = Field(description="what no part names: moving results out of the "
                            "sandbox, comparing them, teardown, the worker's own work")
    total_ms: float = Field(description="the sum of the parts")


class ResultOut(Open):
    """The outcome of a judged submission (API.md: `result`)."""

    verdict: Literal["AC", "WA", "TLE", "MLE", "RE", "CE", "OLE", "IE"]
    score: dict[str, int]
    message: str | None = None
    tests: list[dict[str, Any]] = Field(default_factory=list)
    diagnosis: list[FindingOut] = Field(
        default_factory=list,
        description="what the mistake most likely is, most certain first; [] when unknown")
    environment: EnvironmentOut | None = Field(
        None, description="what judged it (absent from results stored before it was recorded)")
    timing: TimingOut | None = Field(
        None, description="where the time went (absent from results stored before it was "
        "recorded)")
    notes: list[NoteOut] = Field(
        default_factory=list,
        description="facts the verdict does not depend on, e.g. an accepted solution whose "
        "structure differs from the asked-for one; [] when there are none")


class SubmissionOut(SubmissionSummary):
    result: ResultOut | None
    code: str


# Ids are INTEGER columns (32-bit on PostgreSQL): a larger one is a bad request, not a
# missing row (nor a database error).
MAX_ID = 2**31 - 1


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route: these error statuses (their body, the problem details of
    app.api.problem_details, is filled in for every error response of the document)."""
    return {code: {"description": HTTPStatus(code).phrase} for code in codes}

