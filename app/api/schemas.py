"""Request and response bodies (they also make the OpenAPI document)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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


class Tolerance(BaseModel):
    atol: float
    rtol: float


class ProblemOut(ProblemSummary):
    statement: str
    starter: str | None
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


class SubmissionOut(SubmissionSummary):
    result: dict[str, Any] | None
    code: str


class Error(BaseModel):
    detail: Any


# Ids are INTEGER columns (32-bit on PostgreSQL): a larger one is a bad request, not a
# missing row (nor a database error).
MAX_ID = 2**31 - 1


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route: these error statuses, each with an `Error` body."""
    return {code: {"model": Error} for code in codes}

