"""Submissions: accepting code, showing it to whom it belongs, rejudging."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

import judge
from app.context import Context
from app.db.models import Judgement, Problem, ProblemVersion, Submission, User, utcnow
from app.services import problems, scope
from app.services.arrivals import Arrival
from app.services.errors import Invalid, NotFound, QueueFull, RateLimited, TooLarge
from app.services.queue import announce, notify_in
from app.services.users import UserView

MODES = ("submit", "run")
QUEUE_FULL_RETRY_S = 10
# A submission without JAX is judged in well under a second; one with JAX may compile for
# seconds. The quick one is claimed as if posted this much earlier: it never waits behind
# compilations queued before it, and a JAX submission waits at most this much longer for it.
# Nor behind compilations already running: it is marked `quick`, and the workers' quick lane
# (app/worker.py) claims it while every other worker is busy.
QUICK_HEAD_START = timedelta(seconds=10)


def check_code(ctx: Context, code: str) -> None:
    try:
        size = len(code.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise Invalid("code: not valid UTF-8 text (it contains unpaired surrogates)") from e
    limit = ctx.settings.max_code_bytes
    if size > limit:
        raise TooLarge(f"code: {size} bytes, more than the limit of {limit} bytes")
    if not code.strip():
        raise Invalid("code: empty")
    if "\x00" in code:
        raise Invalid("code: contains a NUL character (not valid in Python source)")


def create(ctx: Context, user: UserView, problem: str, code: str, mode: str = "submit",
           arrival: Arrival | None = None) -> dict[str, Any]:
    """Queue `code`. `arrival`: when the request reached the service (arrivals.py); the
    submission then joins the queue after those that arrived before it."""
    try:
        return _create(ctx, user, problem, code, mode, arrival)
    finally:
        if arrival is not None:
            ctx.arrivals.leave(arrival)


def _create(ctx: Context, user: UserView, problem: str, code: str, mode: str,
            arrival: Arrival | None) -> dict[str, Any]:
    if mode not in MODES:
        raise Invalid(f"mode: one of {', '.join(MODES)}")
    check_code(ctx, code)
    version_id = problems.current_version_id(ctx, problem)
    quick = not judge.uses_jax(code)
    now = utcnow()
    if arrival is not None:
        now = arrival.at
        ctx.arrivals.wait_turn(arrival)
    st = ctx.settings
    with ctx.db.transaction() as s:
        if not user.is_admin:
            since = now - timedelta(seconds=st.rate_window_seconds)
            recent = s.execute(select(func.count(), func.min(Submission.created_at))
                               .where(Submission.user_id == user.id,
                                      Submission.created_at > since)).one()
            if recent[0] >= st.rate_limit:
                wait = (recent[1] + timedelta(seconds=st.rate_window_seconds) - now)
                raise RateLimited(
                    f"more than {st.rate_limit} submissions in {st.rate_window_seconds:g} s",
                    retry_after=max(1, math.ceil(wait.total_seconds())))
        queued = s.scalar(select(func.count()).where(Submission.status == "queued")) or 0
        if queued >= st.queue_max:
            raise QueueFull(f"the judging queue is full ({queued} waiting)",
                            retry_after=QUEUE_FULL_RETRY_S)
        problem_id = s.scalar(select(ProblemVersion.problem_id)
                              .where(ProblemVersion.id == version_id))
        sub = Submission(user_id=user.id, problem_id=problem_id, version_id=version_id,
                         mode=mode, code=code, status="queued", created_at=now, queued_at=now,
                         available_at=now - QUICK_HEAD_START if quick else now, quick=quick)
        s.add(sub)
        s.flush()
        sid = sub.id
        notify_in(s, queue=True)
    announce(ctx, queue=True)
    return {"id": sid, "status": "queued"}


def _view(sub: Submission, slug: str, username: str, judgements: list[Judgement],
          version_number: int, *, full: bool) -> dict[str, Any]:
    done = sub.status == "done"
    latest = judgements[-1] if judgements and done else None
    out: dict[str, Any] = {
        "id": sub.id,
        "problem": slug,
        "mode": sub.mode,
        "status": sub.status,
        "verdict": sub.verdict if done else None,
        "created_at": sub.created_at.isoformat(),
        "finished_at": sub.finished_at.isoformat() if done and sub.finished_at else None,
        "user": username,
        "version": version_number,
        "score": ({"passed": latest.passed, "total": latest.total} if latest else None),
    }
    if full:
        out["result"] = latest.result if latest else None
        out["progress"] = sub.progress if sub.status == "running" else None
        out["code"] = sub.code
        out["attempts"] = sub.attempts
        # While it is judged: how long it waited for a worker (the live panel says so).
        out["queue_ms"] = (max((sub.started_at - sub.queued_at).total_seconds() * 1000.0, 0.0)
                           if sub.status == "running" and sub.started_at else None)
        out["judgements"] = [
            {"verdict": j.verdict, "score": {"passed": j.passed, "total": j.total},
             "version_id": j.version_id, "worker": j.worker, "attempts": j.attempts,
             "judge_ms": round(j.judge_ms, 1), "started_at": j.started_at.isoformat(),
             "finished_at": j.finished_at.isoformat()}
            for j in judgements]
    return out


def get(ctx: Context, user: UserView, submission_id: int) -> dict[str, Any]:
    """The submission, for its owner or an admin; NotFound for anyone else."""
    with ctx.db.transaction() as s:
        row = s.execute(
            select(Submission, Problem.slug, User.username, ProblemVersion.number)
            .join(Problem, Problem.id == Submission.problem_id)
            .join(User, User.id == Submission.user_id)
            .join(ProblemVersion, ProblemVersion.id == Submission.version_id)
            .where(Submission.id == submission_id)).first()
        if row is None or not _may_see(s, user, row[0]):
            raise NotFound(f"no submission {submission_id}")
        sub, slug, username, number = row
        judgements = list(s.scalars(select(Judgement).where(Judgement.submission_id == sub.id)
                                    .order_by(Judgement.id)))
        view = _view(sub, slug, username, judgements, number, full=True)
        return _veiled(s, user, sub, view)


def _may_see(s: Session, user: UserView, sub: Submission) -> bool:
    """Its owner, an admin, and the staff of a course it counts for (services/scope.py).
    A regrade's hidden copy is nobody's to see here (services/regrades.py shows it)."""
    if sub.mode not in MODES:
        return False
    return sub.user_id == user.id or user.is_admin or scope.staff_sees(s, user.id, sub.id)


def _veiled(s: Session, user: UserView, sub: Submission, view: dict[str, Any]) -> dict[str, Any]:
    """What its author sees of it during an exam that it counts for (services/scope.py)."""
    if sub.user_id != user.id or sub.mode != "submit":
        return view
    until = scope.veil_until(scope.open_exams(s, user.id), problem_id=sub.problem_id,
                             created_at=sub.created_at, mode=sub.mode)
    return view if until is None else scope.veil(view, until)


def status_of(ctx: Context, user: UserView, submission_id: int) -> str:
    """Only the status (cheap, for waiting loops); NotFound as for get()."""
    with ctx.db.transaction() as s:
        row = s.execute(select(Submission.status, Submission.user_id, Submission.mode)
                        .where(Submission.id == submission_id)).first()
        if row is None or row[2] not in MODES or (
                row[1] != user.id and not user.is_admin
                and not scope.staff_sees(s, user.id, submission_id)):
            raise NotFound(f"no submission {submission_id}")
    return row[0]


def list_for(ctx: Context, user: UserView, *, problem: str | None = None, limit: int = 50,
             before: int | None = None) -> list[dict[str, Any]]:
    """The user's own submissions, newest first; `before` is an id cursor."""
    if problem is not None and not problems.SLUG_RE.match(problem):
        return []  # no problem has that name (and it may not even be storable text)
    with ctx.db.transaction() as s:
        q = (select(Submission, Problem.slug, ProblemVersion.number)
             .join(Problem, Problem.id == Submission.problem_id)
             .join(ProblemVersion, ProblemVersion.id == Submission.version_id)
             .where(Submission.user_id == user.id))
        if problem is not None:
            q = q.where(Problem.slug == problem)
        if before is not None:
            q = q.where(Submission.id < before)
        rows = s.execute(q.order_by(Submission.id.desc()).limit(limit)).all()
        ids = [r[0].id for r in rows]
        last: dict[int, Judgement] = {}
        if ids:
            newest = (select(func.max(Judgement.id)).where(Judgement.submission_id.in_(ids))
                      .group_by(Judgement.submission_id))
            for j in s.scalars(select(Judgement).where(Judgement.id.in_(newest))):
                last[j.submission_id] = j
        exams = scope.open_exams(s, user.id) if rows else []
        out = []
        for sub, slug, number in rows:
            view = _view(sub, slug, user.username, [last[sub.id]] if sub.id in last else [],
                         number, full=False)
            until = scope.veil_until(exams, problem_id=sub.problem_id,
                                     created_at=sub.created_at, mode=sub.mode)
            out.append(view if until is None else scope.veil(view, until))
        return out


def rejudge(ctx: Context, submission_ids: list[int], *, latest_version: bool = True,
            version_id: int | None = None) -> int:
    """Queue submissions again. The old judgements stay; the new one is added. With
    `latest_version` the new judgement uses the problem's current version; with
    `version_id`, that version (a regrade applies the version it previewed)."""
    if not submission_ids:
        return 0
    now = utcnow()
    with ctx.db.transaction() as s:
        found = set(s.scalars(select(Submission.id).where(Submission.id.in_(submission_ids))))
        missing = sorted(set(submission_ids) - found)
        if missing:
            raise NotFound(f"no submission {missing[0]}")
        values: dict[str, Any] = dict(
            status="queued", verdict=None, fence=Submission.fence + 1, attempts=0,
            lease_owner=None, lease_expires_at=None, queued_at=now, available_at=now,
            started_at=None, finished_at=None, last_error=None)
        if version_id is not None:
            values["version_id"] = version_id
        elif latest_version:
            newest = (select(ProblemVersion.id)
                      .where(ProblemVersion.problem_id == Submission.problem_id)
                      .order_by(ProblemVersion.number.desc()).limit(1).scalar_subquery())
            values["version_id"] = newest
        s.execute(update(Submission).where(Submission.id.in_(submission_ids)).values(**values)
                  .execution_options(synchronize_session=False))
        notify_in(s, queue=True, submissions=tuple(submission_ids))
    announce(ctx, queue=True, submissions=tuple(submission_ids))
    return len(submission_ids)


def ids_of_problem(ctx: Context, slug: str, *, mode: str | None = "submit") -> list[int]:
    with ctx.db.transaction() as s:
        pid = s.scalar(select(Problem.id).where(Problem.slug == slug))
        if pid is None:
            raise NotFound(f"no problem {slug!r}")
        q = select(Submission.id).where(Submission.problem_id == pid)
        if mode is not None:
            q = q.where(Submission.mode == mode)
        return list(s.scalars(q.order_by(Submission.id)))
