"""Assignments: a set of problems, each worth some points, with an opening time, a due time,
a late policy (a penalty per day late, up to a last day), a scoring rule (the best or the
last submission) and a feedback policy (full, or exam: verdicts only until the close).

Only a course's instructors create and change its assignments; every member sees them.
Times are aware UTC datetimes throughout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.context import Context
from app.db.models import Assignment, AssignmentProblem, Problem, ProblemVersion, utcnow
from app.services import courses, problems
from app.services.errors import Invalid, NotFound
from app.services.users import UserView

SCORING = ("best", "last")
FEEDBACK = ("full", "exam")
MAX_PROBLEMS = 50
DAY = timedelta(days=1)


@dataclass(frozen=True)
class ProblemPoints:
    slug: str
    points: float


@dataclass(frozen=True)
class AssignmentSpec:
    """What an instructor gives to create or change an assignment."""

    title: str
    problems: tuple[ProblemPoints, ...]
    opens_at: datetime
    due_at: datetime
    late_until: datetime | None = None
    late_penalty_pct: float = 0.0
    scoring: str = "best"
    feedback: str = "full"


@dataclass(frozen=True)
class AssignmentProblemView:
    slug: str
    title: str
    points: float
    problem_id: int


@dataclass(frozen=True)
class AssignmentView:
    id: int
    course_id: int
    title: str
    opens_at: datetime
    due_at: datetime
    late_until: datetime | None
    late_penalty_pct: float
    scoring: str
    feedback: str
    problems: tuple[AssignmentProblemView, ...] = field(default=())
    role: str = "learner"  # the viewer's role in the course

    @property
    def closes_at(self) -> datetime:
        """The last moment a submission counts (services/scope.py)."""
        return self.late_until or self.due_at

    @property
    def max_points(self) -> float:
        return sum(p.points for p in self.problems)

    def status(self, now: datetime | None = None) -> str:
        """upcoming | open | late (past due, late submissions still count) | closed."""
        now = now or utcnow()
        if now < self.opens_at:
            return "upcoming"
        if now <= self.due_at:
            return "open"
        return "late" if now <= self.closes_at else "closed"

    def exam_running(self, now: datetime | None = None) -> bool:
        """Exam mode hides per-test figures until the close."""
        return self.feedback == "exam" and (now or utcnow()) <= self.closes_at

    def days_late(self, at: datetime) -> int:
        """Whole days (begun) after the due time: 1 second late is one day late."""
        if at <= self.due_at:
            return 0
        return math.ceil((at - self.due_at) / DAY)

    def penalty_pct(self, at: datetime) -> float:
        return min(100.0, self.days_late(at) * self.late_penalty_pct)

    @property
    def is_staff(self) -> bool:
        return self.role in (*courses.STAFF, "admin")


def check_spec(spec: AssignmentSpec) -> AssignmentSpec:
    """The spec, normalised; Invalid naming the first field that is not acceptable."""
    title = courses.check_title(spec.title)
    for name in ("opens_at", "due_at", "late_until"):
        value = getattr(spec, name)
        if value is not None and value.tzinfo is None:
            raise Invalid(f"{name}: give a time zone (UTC: a trailing Z)")
    if spec.due_at < spec.opens_at:
        raise Invalid("due_at: before opens_at")
    if spec.late_until is not None and spec.late_until < spec.due_at:
        raise Invalid("late_until: before due_at (the last day of late submissions)")
    if not 0.0 <= spec.late_penalty_pct <= 100.0 or math.isnan(spec.late_penalty_pct):
        raise Invalid("late_penalty_pct: a percentage per day late, 0 to 100")
    if spec.scoring not in SCORING:
        raise Invalid(f"scoring: one of {', '.join(SCORING)}")
    if spec.feedback not in FEEDBACK:
        raise Invalid(f"feedback: one of {', '.join(FEEDBACK)}")
    if not spec.problems:
        raise Invalid("problems: at least one")
    if len(spec.problems) > MAX_PROBLEMS:
        raise Invalid(f"problems: at most {MAX_PROBLEMS}")
    slugs = [p.slug for p in spec.problems]
    if len(set(slugs)) != len(slugs):
        raise Invalid("problems: each problem once")
    for p in spec.problems:
        if not (0.0 < p.points <= 10_000.0):
            raise Invalid(f"problems: {p.slug}: points from above 0 to 10000")
    return replace(spec, title=title)


def _problem_ids(s: Session, spec: AssignmentSpec) -> list[int]:
    ids = []
    for p in spec.problems:
        problems.require_slug(p.slug)
        pid = s.scalar(select(Problem.id).where(Problem.slug == p.slug))
        if pid is None:
            raise NotFound(f"no problem {p.slug!r}")
        ids.append(pid)
    return ids


def _fill(s: Session, a: Assignment, spec: AssignmentSpec) -> None:
    ids = _problem_ids(s, spec)
    a.title, a.opens_at, a.due_at = spec.title, spec.opens_at, spec.due_at
    a.late_until, a.late_penalty_pct = spec.late_until, spec.late_penalty_pct
    a.scoring, a.feedback = spec.scoring, spec.feedback
    a.problems = [AssignmentProblem(problem_id=pid, position=i, points=p.points)
                  for i, (pid, p) in enumerate(zip(ids, spec.problems, strict=True))]


def create(ctx: Context, actor: UserView, course_id: int,
           spec: AssignmentSpec) -> AssignmentView:
    spec = check_spec(spec)
    with ctx.db.transaction() as s:
        role = courses.require_instructor(s, course_id, actor)
        a = Assignment(course_id=course_id)
        _fill(s, a, spec)
        s.add(a)
        s.flush()
        return view_of(s, a, role)


def update(ctx: Context, actor: UserView, assignment_id: int,
           spec: AssignmentSpec) -> AssignmentView:
    """Change an assignment. What counts for it follows (services/scope.py): moving the due
    time re-scores the submissions already made."""
    spec = check_spec(spec)
    with ctx.db.transaction() as s:
        a = _load(s, assignment_id, actor)
        role = courses.require_instructor(s, a.course_id, actor)
        # Replaced whole: flush the removal before the new rows (one problem per row).
        a.problems = []
        s.flush()
        _fill(s, a, spec)
        s.flush()
        return view_of(s, a, role)


def _load(s: Session, assignment_id: int, user: UserView) -> Assignment:
    a = s.get(Assignment, assignment_id)
    if a is None or courses.role_of(s, a.course_id, user) is None:
        raise NotFound(f"no assignment {assignment_id}")
    return a


def view_of(s: Session, a: Assignment, role: str) -> AssignmentView:
    latest = problems.latest_version_numbers()
    rows = s.execute(
        select(AssignmentProblem, Problem.slug, ProblemVersion.title)
        .join(Problem, Problem.id == AssignmentProblem.problem_id)
        .join(latest, latest.c.problem_id == Problem.id)
        .join(ProblemVersion, (ProblemVersion.problem_id == Problem.id)
              & (ProblemVersion.number == latest.c.n))
        .where(AssignmentProblem.assignment_id == a.id)
        .order_by(AssignmentProblem.position)).all()
    items = tuple(AssignmentProblemView(slug, title, ap.points, ap.problem_id)
                  for ap, slug, title in rows)
    return AssignmentView(a.id, a.course_id, a.title, a.opens_at, a.due_at, a.late_until,
                          a.late_penalty_pct, a.scoring, a.feedback, items, role)


def get(ctx: Context, user: UserView, assignment_id: int) -> AssignmentView:
    with ctx.db.transaction() as s:
        a = _load(s, assignment_id, user)
        return view_of(s, a, courses.require_member(s, a.course_id, user))


def require(s: Session, user: UserView, assignment_id: int, *,
            staff: bool = False) -> AssignmentView:
    """The assignment for a member (for staff only with `staff`), inside the caller's
    transaction."""
    a = _load(s, assignment_id, user)
    role = (courses.require_staff if staff else courses.require_member)(s, a.course_id, user)
    return view_of(s, a, role)


def list_for_course(ctx: Context, user: UserView, course_id: int) -> list[AssignmentView]:
    with ctx.db.transaction() as s:
        role = courses.require_member(s, course_id, user)
        rows = s.scalars(select(Assignment).where(Assignment.course_id == course_id)
                         .order_by(Assignment.due_at, Assignment.id))
        return [view_of(s, a, role) for a in rows]
