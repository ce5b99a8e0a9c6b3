"""Submissions: create, read (long-poll), list, stream, rejudge."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from app.api.deps import AdminDep, ArrivalDep, BrowserUserDep, CtxDep, UserDep
from app.api.schemas import (
    MAX_ID,
    Queued,
    SubmissionIn,
    SubmissionOut,
    SubmissionSummary,
    errors,
)
from app.context import Context
from app.services import submissions
from app.services.users import UserView

router = APIRouter(prefix="/api/v1", tags=["submissions"])

SubmissionId = Annotated[int, Path(ge=1, le=MAX_ID, description="a submission's id")]

KEEPALIVE_S = 15.0


POLL_MAX_S = 5.0


def _first_poll_s(ctx: Context) -> float:
    """How long a waiting request sleeps before it looks at the database anyway, when nothing
    woke it. Workers in this process wake it at once; those of other processes only through
    PostgreSQL's NOTIFY, so on SQLite they are heard by polling: from every half second,
    doubling while nothing happens (`_next_poll_s`), so that the requests waiting behind a long
    queue do not each query the database twice a second for nothing."""
    return POLL_MAX_S if ctx.db.is_postgres else 0.5


def _next_poll_s(ctx: Context, step: float, woken: bool) -> float:
    return _first_poll_s(ctx) if woken else min(step * 2, POLL_MAX_S)


@router.post("/submissions", status_code=202, response_model=Queued,
             responses=errors(401, 404, 413, 422, 429, 503))
def create_submission(arrival: ArrivalDep, body: SubmissionIn, ctx: CtxDep, user: UserDep,
                      response: Response) -> dict:
    """Queue code for judging: `submit` runs every test, `run` the samples only."""
    out = submissions.create(ctx, user, body.problem, body.code, body.mode, arrival)
    response.headers["Location"] = f"/api/v1/submissions/{out['id']}"
    return out


@router.get("/submissions", response_model=list[SubmissionSummary],
            responses=errors(401, 422))
def list_submissions(
    ctx: CtxDep, user: UserDep, response: Response, request: Request,
    problem: Annotated[str | None, Query(description="only this problem's")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[int | None, Query(ge=1, le=MAX_ID,
                                        description="ids below this (the next page)")] = None,
) -> list[dict]:
    """The caller's submissions, newest first. The next page: `before` = the last id seen
    (also given in the Link header)."""
    items = submissions.list_for(ctx, user, problem=problem, limit=limit, before=before)
    if len(items) == limit:
        nxt = request.url.include_query_params(before=items[-1]["id"])
        response.headers["Link"] = f'<{nxt}>; rel="next"'
    return items


async def _wait_done(ctx: Context, user: UserView, sid: int, wait: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(wait, ctx.settings.max_wait_seconds)
    step = _first_poll_s(ctx)
    with ctx.hub.subscribe(sid) as sub:
        while True:
            status = await run_in_threadpool(submissions.status_of, ctx, user, sid)
            remaining = deadline - loop.time()
            if status == "done" or remaining <= 0:
                return
            woken = await sub.wait_async(min(remaining, step))
            step = _next_poll_s(ctx, step, woken)


@router.get("/submissions/{sid}", response_model=SubmissionOut,
            responses=errors(401, 404, 422))
async def get_submission(
    sid: SubmissionId, ctx: CtxDep, user: UserDep,
    wait: Annotated[float | None, Query(ge=0, description="seconds to wait for the verdict")]
    = None,
) -> dict:
    """A submission with its result (owner or admin). With `wait`, answers as soon as it is
    done, or after that many seconds (at most the server's cap) with its current state."""
    if wait:
        await _wait_done(ctx, user, sid, wait)
    return await run_in_threadpool(submissions.get, ctx, user, sid)


@router.get("/submissions/{sid}/events", responses=errors(401, 404, 422),
            response_class=StreamingResponse)
async def submission_events(sid: SubmissionId, ctx: CtxDep,
                            user: BrowserUserDep) -> StreamingResponse:
    """Server-sent events: a `status` event with the submission at every change of status
    and at every test judged (`progress` lists the tests so far), until it is done.
    Authenticated by a bearer token or by the pages' session cookie."""
    await run_in_threadpool(submissions.status_of, ctx, user, sid)  # 404 before streaming

    async def stream() -> AsyncIterator[str]:
        with ctx.hub.subscribe(sid) as sub:
            last = None
            idle = 0.0
            step = _first_poll_s(ctx)
            while True:
                view = await run_in_threadpool(submissions.get, ctx, user, sid)
                key = (view["status"], len(view["judgements"]), view["attempts"],
                       len(view.get("progress") or []))
                if key != last:
                    last = key
                    view.pop("code", None)
                    yield f"event: status\ndata: {json.dumps(view)}\n\n"
                    if view["status"] == "done":
                        return
                woken = await sub.wait_async(step)
                if woken:
                    idle = 0.0
                else:
                    idle += step
                    if idle >= KEEPALIVE_S:
                        idle = 0.0
                        yield ": keep-alive\n\n"
                step = _next_poll_s(ctx, step, woken)

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.post("/submissions/{sid}/rejudge", status_code=202, response_model=Queued,
             responses=errors(401, 403, 404, 422))
def rejudge(sid: SubmissionId, ctx: CtxDep, admin: AdminDep) -> dict:
    """Judge again (admins). The old judgement is kept; a new one is added."""
    submissions.rejudge(ctx, [sid])
    return {"id": sid, "status": "queued"}
