"""Problems."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from app.api.deps import CtxDep
from app.api.schemas import ProblemOut, ProblemSummary, errors
from app.services import problems, samples

router = APIRouter(prefix="/api/v1", tags=["problems"])


@router.get("/problems", response_model=list[ProblemSummary])
def list_problems(ctx: CtxDep) -> list[dict]:
    return problems.list_problems(ctx)


@router.get("/problems/{slug}", response_model=ProblemOut, responses=errors(404))
async def get_problem(slug: str, ctx: CtxDep) -> dict:
    """The current version of a problem: statement, limits, tolerance and the samples'
    inputs and expected outputs (summarised)."""
    return await run_in_threadpool(samples.problem_with_samples, ctx, slug)
