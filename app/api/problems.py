"""Problems, and their samples to take home."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.api.deps import CtxDep
from app.api.schemas import ProblemOut, ProblemSummary, errors
from app.services import problems, sample_files, samples, starters

router = APIRouter(prefix="/api/v1", tags=["problems"])


@router.get("/problems", response_model=list[ProblemSummary])
def list_problems(ctx: CtxDep) -> list[dict]:
    return problems.list_problems(ctx)


@router.get("/problems/{slug}", response_model=ProblemOut, responses=errors(404))
async def get_problem(slug: str, ctx: CtxDep) -> dict:
    """The current version of a problem: statement, limits, tolerance, starters (one per
    framework when it allows several) and the samples' inputs and expected outputs
    (summarised; the whole samples are the downloads below)."""
    out = await run_in_threadpool(samples.problem_with_samples, ctx, slug)
    out["starters"] = await run_in_threadpool(starters.starters_of, ctx, slug)
    return out


def _attachment(data: bytes, media_type: str, name: str) -> Response:
    return Response(data, media_type=media_type,
                    headers={"Content-Disposition": f'attachment; filename="{name}"',
                             "Cache-Control": "no-cache"})


@router.get("/problems/{slug}/samples.npz", responses={
    200: {"content": {"application/octet-stream": {}},
          "description": "NumPy .npz: the samples document and its arrays"}, **errors(404)},
    response_class=Response)
async def samples_npz(slug: str, ctx: CtxDep) -> Response:
    """Every sample test whole (inputs and expected output), as NumPy's `.npz`: read it
    with the checker (`/checker.py`), or `np.load(path)` (the document is `__samples__`,
    JSON). docs/api.md describes the format. Hidden tests are never included."""
    files = await run_in_threadpool(sample_files.sample_files, ctx, slug)
    return _attachment(files.npz_bytes, "application/octet-stream",
                       sample_files.download_name(files.slug, "npz"))


@router.get("/problems/{slug}/samples.json", responses={
    200: {"content": {"application/json": {}}, "description": "the samples document"},
    **errors(404)}, response_class=Response)
async def samples_json(slug: str, ctx: CtxDep) -> Response:
    """The same samples as one JSON document (arrays as dtype, shape and flat values)."""
    files = await run_in_threadpool(sample_files.sample_files, ctx, slug)
    return _attachment(files.json_bytes, "application/json",
                       sample_files.download_name(files.slug, "json"))


@router.get("/problems/{slug}/checker.py", responses={
    200: {"content": {"text/x-python": {}}, "description": "the checker"}, **errors(404)},
    response_class=Response)
def checker(slug: str, ctx: CtxDep) -> Response:
    """A self-contained Python file needing only NumPy: `python check.py solution.py
    SLUG-samples.npz` runs the solution on the samples and compares as the judge does."""
    info = problems.get_problem(ctx, slug)
    return _attachment(sample_files.checker_source(info["slug"]).encode(),
                       "text/x-python; charset=utf-8", "check.py")
