"""Regrades with a preview: after a problem's package changed (a test added, a tolerance
moved), staff see which verdicts of an assignment's submissions would flip before anything
changes, then apply it.

- The preview judges a hidden copy of each submission (mode "preview", owned by an account
  nobody signs in as) against the problem's current version, in the workers, through the
  ordinary queue. It changes nothing the learners or the gradebook see.
- Applying rejudges the submissions themselves against that same version (a newer version
  since is not taken); their old judgements stay, and the run keeps the verdicts from before
  and from the preview: the history keeps both.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

import judge
from app.context import Context
from app.db.models import (
    Judgement,
    Problem,
    ProblemVersion,
    RegradeItem,
    RegradeRun,
    Submission,
    User,
    utcnow,
)
from app.services import assignments, gradebook, problems, submissions
from app.services.errors import Conflict, NotFound
from app.services.queue import announce, notify_in
from app.services.users import UserView

PREVIEW_MODE = "preview"
# The account the hidden copies belong to: not a valid username (nobody can register it)
# and no valid password hash (nobody can sign in as it).
PREVIEW_USER = "~regrade-preview"


@dataclass(frozen=True)
class ItemView:
    submission_id: int
    username: str
    before_verdict: str | None
    before_passed: int | None
    before_total: int | None
    preview_status: str  # queued | running | done
    preview_verdict: str | None
    preview_passed: int | None
    preview_total: int | None
    applied_verdict: str | None  # the verdict the applied rejudge gave (None until then)

    @property
    def flips(self) -> bool:
        return self.preview_status == "done" and self.preview_verdict != self.before_verdict


@dataclass(frozen=True)
class RunView:
    id: int
    assignment_id: int
    problem: str
    version: int
    requested_by: str
    created_at: datetime
    applied_at: datetime | None
    items: tuple[ItemView, ...]

    @property
    def done(self) -> bool:
        return all(i.preview_status == "done" for i in self.items)

    @property
    def flips(self) -> tuple[ItemView, ...]:
        return tuple(i for i in self.items if i.flips)


def _preview_user(s: Session) -> int:
    uid = s.scalar(select(User.id).where(User.username == PREVIEW_USER))
    if uid is None:
        user = User(username=PREVIEW_USER, password_hash="!", is_admin=False)
        s.add(user)
        s.flush()
        uid = user.id
    return uid


def _latest(s: Session, ids: list[int]) -> dict[int, Judgement]:
    if not ids:
        return {}
    newest = (select(func.max(Judgement.id)).where(Judgement.submission_id.in_(ids))
              .group_by(Judgement.submission_id))
    return {j.submission_id: j for j in s.scalars(select(Judgement)
                                                   .where(Judgement.id.in_(newest)))}


def start(ctx: Context, actor: UserView, assignment_id: int, slug: str) -> RunView:
    """Queue the preview of every counted submission of `slug` against its current version."""
    problems.require_slug(slug)
    now = utcnow()
    with ctx.db.transaction() as s:
        a = assignments.require(s, actor, assignment_id, staff=True)
        item = next((p for p in a.problems if p.slug == slug), None)
        if item is None:
            raise NotFound(f"no problem {slug!r} in assignment {assignment_id}")
        version_id = s.scalar(select(ProblemVersion.id)
                              .where(ProblemVersion.problem_id == item.problem_id)
                              .order_by(ProblemVersion.number.desc()).limit(1))
        assert version_id is not None
        ids = [c.id for c in gradebook.counted(s, assignment_id)
               if c.problem_id == item.problem_id]
        run = RegradeRun(assignment_id=assignment_id, problem_id=item.problem_id,
                         version_id=version_id, requested_by=actor.username, created_at=now)
        s.add(run)
        s.flush()
        owner = _preview_user(s)
        before = _latest(s, ids)
        for sub in s.scalars(select(Submission).where(Submission.id.in_(ids))
                             .order_by(Submission.id)):
            copy = Submission(user_id=owner, problem_id=sub.problem_id, version_id=version_id,
                              mode=PREVIEW_MODE, code=sub.code, status="queued",
                              created_at=now, queued_at=now, available_at=now,
                              quick=not judge.uses_jax(sub.code))
            s.add(copy)
            s.flush()
            j = before.get(sub.id)
            s.add(RegradeItem(run_id=run.id, submission_id=sub.id, preview_id=copy.id,
                              before_verdict=sub.verdict if sub.status == "done" else None,
                              before_passed=j.passed if j else None,
                              before_total=j.total if j else None))
        notify_in(s, queue=True)
        run_id = run.id
    announce(ctx, queue=True)
    return get(ctx, actor, run_id)


def _load(s: Session, actor: UserView, run_id: int) -> RegradeRun:
    run = s.get(RegradeRun, run_id)
    if run is None:
        raise NotFound(f"no regrade {run_id}")
    try:
        assignments.require(s, actor, run.assignment_id, staff=True)
    except NotFound as e:
        raise NotFound(f"no regrade {run_id}") from e
    return run


def get(ctx: Context, actor: UserView, run_id: int) -> RunView:
    with ctx.db.transaction() as s:
        return _view(s, _load(s, actor, run_id))


def _view(s: Session, run: RegradeRun) -> RunView:
    original = aliased(Submission)
    rows = s.execute(select(RegradeItem, Submission, User.username)
                     .join(Submission, Submission.id == RegradeItem.preview_id)
                     .join(original, original.id == RegradeItem.submission_id)
                     .join(User, User.id == original.user_id)
                     .where(RegradeItem.run_id == run.id).order_by(RegradeItem.id)).all()
    previews = _latest(s, [copy.id for _, copy, _ in rows])
    applied: dict[int, str] = {}
    if run.applied_at is not None:
        for j in s.scalars(select(Judgement).where(
                Judgement.submission_id.in_([i.submission_id for i, _, _ in rows]),
                Judgement.started_at >= run.applied_at).order_by(Judgement.id)):
            applied.setdefault(j.submission_id, j.verdict)
    items = []
    for item, copy, username in rows:
        p = previews.get(copy.id) if copy.status == "done" else None
        items.append(ItemView(item.submission_id, username, item.before_verdict,
                              item.before_passed, item.before_total, copy.status,
                              p.verdict if p else None, p.passed if p else None,
                              p.total if p else None, applied.get(item.submission_id)))
    slug = s.scalar(select(Problem.slug).where(Problem.id == run.problem_id)) or "?"
    number = s.scalar(select(ProblemVersion.number)
                      .where(ProblemVersion.id == run.version_id)) or 0
    return RunView(run.id, run.assignment_id, slug, number, run.requested_by, run.created_at,
                   run.applied_at, tuple(items))


def list_runs(ctx: Context, actor: UserView, assignment_id: int) -> list[RunView]:
    with ctx.db.transaction() as s:
        assignments.require(s, actor, assignment_id, staff=True)
        runs = s.scalars(select(RegradeRun).where(RegradeRun.assignment_id == assignment_id)
                         .order_by(RegradeRun.id.desc()))
        return [_view(s, r) for r in runs]


def apply(ctx: Context, actor: UserView, run_id: int) -> RunView:
    """Rejudge the previewed submissions against the previewed version (once the preview is
    complete; once only)."""
    with ctx.db.transaction() as s:
        run = _load(s, actor, run_id)
        view = _view(s, run)
        if run.applied_at is not None:
            raise Conflict(f"regrade {run_id} was applied at {run.applied_at.isoformat()}")
        if not view.done:
            raise Conflict(f"regrade {run_id}: the preview is not complete "
                           f"({sum(i.preview_status == 'done' for i in view.items)} of "
                           f"{len(view.items)} judged)")
        run.applied_at = utcnow()
        version_id = run.version_id
    ids = [i.submission_id for i in view.items]
    if ids:
        submissions.rejudge(ctx, ids, latest_version=False, version_id=version_id)
    return get(ctx, actor, run_id)
