"""The gradebook of an assignment: per learner and problem, the points of the submission that
counts, with the late penalty; the same figures for the pages, the REST API, the CSV export
and the grades sent to the learning platform (app/lti/passback.py).

The rules, in one place:
- a submission scores the problem's points times the share of tests it passed, less the late
  penalty: the assignment's percentage per day late (a day begun counts), at most 100%;
- "best": the highest-scoring counted submission; "last": the last one made;
- a submission not judged yet, or one the judge failed on (Internal Error), never scores
  zero: its cell has no points and says why (pending, judge failure), the row is incomplete
  and is not sent to the platform, and judge failures are rejudged
  (app/course_upkeep.py);
- no counted submission at all scores zero ("missing").
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from app.context import Context
from app.db.models import (
    Assignment,
    AssignmentProblem,
    CourseMember,
    Judgement,
    LtiUser,
    Submission,
    User,
    utcnow,
)
from app.services import assignments, courses, scope
from app.services.assignments import AssignmentView
from app.services.users import UserView

# An IE that came back this many times is left for people to look at (`rejudge`).
MAX_FAILURE_REJUDGES = 2


@dataclass(frozen=True)
class Counted:
    """A submission that counts for the assignment, with its current verdict."""

    id: int
    user_id: int
    problem_id: int
    created_at: datetime
    status: str
    verdict: str | None
    passed: int | None
    total: int | None


@dataclass(frozen=True)
class Cell:
    slug: str
    max_points: float
    points: float | None  # None: not known yet (pending, judge failure) or hidden (exam)
    status: str  # graded | missing | pending | judge-failure
    verdict: str | None = None
    submission_id: int | None = None
    late_days: int = 0
    penalty_pct: float = 0.0
    passed: int | None = None
    total: int | None = None
    provisional: bool = False  # another counted submission is still pending or failed


@dataclass(frozen=True)
class GradeRow:
    user_id: int
    username: str
    lti_user_id: str | None
    cells: tuple[Cell, ...]

    @property
    def points(self) -> float:
        return round(sum(c.points or 0.0 for c in self.cells), 2)

    @property
    def max_points(self) -> float:
        return round(sum(c.max_points for c in self.cells), 2)

    @property
    def percent(self) -> float:
        return round(100.0 * self.points / self.max_points, 2) if self.max_points else 0.0

    @property
    def late_days(self) -> int:
        return max((c.late_days for c in self.cells if c.status == "graded"), default=0)

    @property
    def status(self) -> str:
        """complete, else what keeps it from being final: pending or judge-failure."""
        if any(c.status == "judge-failure" for c in self.cells):
            return "judge-failure"
        if any(c.status == "pending" or c.provisional for c in self.cells):
            return "pending"
        return "complete"


def submission_points(a: AssignmentView, max_points: float, c: Counted) -> float:
    share = (c.passed or 0) / c.total if c.total else 0.0
    return round(max_points * share * (1.0 - a.penalty_pct(c.created_at) / 100.0), 2)


def _scored(c: Counted) -> bool:
    return c.status == "done" and c.verdict not in (None, "IE")


def cell_of(a: AssignmentView, slug: str, max_points: float, subs: list[Counted]) -> Cell:
    """One learner's cell for one problem, from their counted submissions (oldest first)."""
    if not subs:
        return Cell(slug, max_points, 0.0, "missing")
    scored = [c for c in subs if _scored(c)]
    unsettled = [c for c in subs if not _scored(c)]
    if a.scoring == "last":
        chosen = subs[-1]
        if not _scored(chosen):
            failed = chosen.status == "done"
            return Cell(slug, max_points, None, "judge-failure" if failed else "pending",
                        chosen.verdict if failed else None, chosen.id,
                        a.days_late(chosen.created_at), a.penalty_pct(chosen.created_at))
    elif not scored:
        failed = all(c.status == "done" for c in unsettled)
        last = unsettled[-1]
        return Cell(slug, max_points, None, "judge-failure" if failed else "pending",
                    last.verdict if failed else None, last.id)
    else:  # the best; the earliest of equals
        chosen = max(scored, key=lambda c: (submission_points(a, max_points, c), -c.id))
    return Cell(slug, max_points, submission_points(a, max_points, chosen), "graded",
                chosen.verdict, chosen.id, a.days_late(chosen.created_at),
                a.penalty_pct(chosen.created_at), chosen.passed, chosen.total,
                provisional=a.scoring == "best" and bool(unsettled))


def counted(s: Session, assignment_id: int, *, user_id: int | None = None) -> list[Counted]:
    """The submissions that count for the assignment (services/scope.py), oldest first,
    with their latest judgement's figures."""
    newest = (select(func.max(Judgement.id).label("jid"), Judgement.submission_id)
              .group_by(Judgement.submission_id).subquery())
    q = (select(Submission.id, Submission.user_id, Submission.problem_id,
                Submission.created_at, Submission.status, Submission.verdict,
                Judgement.passed, Judgement.total)
         .select_from(Assignment)
         .join(AssignmentProblem, AssignmentProblem.assignment_id == Assignment.id)
         .join(CourseMember, CourseMember.course_id == Assignment.course_id)
         .join(Submission, and_(Submission.problem_id == AssignmentProblem.problem_id,
                                Submission.user_id == CourseMember.user_id))
         .outerjoin(newest, newest.c.submission_id == Submission.id)
         .outerjoin(Judgement, Judgement.id == newest.c.jid)
         .where(Assignment.id == assignment_id, scope.counts_for()))
    if user_id is not None:
        q = q.where(Submission.user_id == user_id)
    rows = s.execute(q.order_by(Submission.created_at, Submission.id)).all()
    return [Counted(r.id, r.user_id, r.problem_id, r.created_at, r.status,
                    r.verdict if r.status == "done" else None, r.passed, r.total)
            for r in rows]


def rows_for(s: Session, a: AssignmentView, user_ids: list[int]) -> list[GradeRow]:
    subs = counted(s, a.id)
    names = dict(s.execute(select(User.id, User.username).where(User.id.in_(user_ids))).all())
    lti = dict(s.execute(select(LtiUser.user_id, LtiUser.subject)
                         .where(LtiUser.user_id.in_(user_ids))).all())
    out = []
    for uid in sorted(user_ids, key=lambda u: names.get(u, "")):
        mine = [c for c in subs if c.user_id == uid]
        cells = tuple(cell_of(a, p.slug, p.points, [c for c in mine
                                                    if c.problem_id == p.problem_id])
                      for p in a.problems)
        out.append(GradeRow(uid, names.get(uid, "?"), lti.get(uid), cells))
    return out


def gradebook(ctx: Context, actor: UserView, assignment_id: int
              ) -> tuple[AssignmentView, list[GradeRow]]:
    """Every learner's row (staff)."""
    with ctx.db.transaction() as s:
        a = assignments.require(s, actor, assignment_id, staff=True)
        return a, rows_for(s, a, courses.learner_ids(s, a.course_id))


def my_grade(ctx: Context, user: UserView, assignment_id: int
             ) -> tuple[AssignmentView, GradeRow]:
    """The caller's own row. During an exam, verdicts only: no points, no test counts."""
    with ctx.db.transaction() as s:
        a = assignments.require(s, user, assignment_id)
        row = rows_for(s, a, [user.id])[0]
    if a.exam_running():
        row = replace(row, cells=tuple(
            replace(c, points=None, passed=None, total=None) for c in row.cells))
    return a, row


# --- CSV ---------------------------------------------------------------------------------


def _num(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}".rstrip("0").rstrip(".")


def csv_columns(a: AssignmentView) -> list[str]:
    """Identifiers first (the learning platforms match on one of them), then a column per
    problem, then the total the platform's grade item takes."""
    return (["Student", "ID", "SIS Login ID", "LTI User ID"]
            + [f"{p.title} [{p.slug}] ({_num(p.points)} pts)" for p in a.problems]
            + ["Total", "Max Points", "Percent", "Late Days", "Late Penalty %", "Status"])


def to_csv(a: AssignmentView, rows: list[GradeRow]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(csv_columns(a))
    for r in rows:
        penalty = max((c.penalty_pct for c in r.cells if c.status == "graded"), default=0.0)
        w.writerow([r.username, r.user_id, r.username, r.lti_user_id or ""]
                   + [_num(c.points) for c in r.cells]
                   + [_num(r.points), _num(r.max_points), _num(r.percent), r.late_days,
                      _num(penalty), r.status])
    return buf.getvalue()


def csv_filename(a: AssignmentView) -> str:
    safe = "".join(ch if ch.isalnum() else "-" for ch in a.title.lower()).strip("-")[:40]
    return f"grades-{a.id}-{safe or 'assignment'}-{utcnow():%Y%m%d}.csv"
