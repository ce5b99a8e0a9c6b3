"""Which submissions belong to which assignment, and who may see what of them.

The rules, in one place:
- a submission counts for an assignment when it is a Submit (not a Run) by a learner of the
  assignment's course, of one of its problems, made between its opening and its close (the
  due time, or the last day of its late policy). Nothing is recorded at submission time: an
  instructor who moves a due time moves what counts with it, and the public problem pages
  are where learners submit;
- a course's staff see the submissions that count for its assignments, whole; nobody sees
  another course's;
- in exam mode, until the assignment closes, the learner sees of such a submission its
  verdict only: no per-test figures (nor how many tests passed), no diagnosis, no messages
  or output, no live per-test progress (a "veil"). After the close everything shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, select
from sqlalchemy.orm import Session, aliased

from app.db.models import Assignment, AssignmentProblem, CourseMember, Submission, utcnow

EXAM = "exam"


def close_of() -> ColumnElement[datetime]:
    """An assignment's close in SQL: its late policy's last day, else its due time."""
    return func.coalesce(Assignment.late_until, Assignment.due_at)


def counts_for() -> ColumnElement[bool]:
    """Joined with Assignment, AssignmentProblem and CourseMember (by the caller's FROM): the
    submission counts for the assignment."""
    return and_(Submission.mode == "submit",
                AssignmentProblem.assignment_id == Assignment.id,
                Submission.problem_id == AssignmentProblem.problem_id,
                CourseMember.course_id == Assignment.course_id,
                CourseMember.user_id == Submission.user_id,
                CourseMember.role == "learner",
                Submission.created_at >= Assignment.opens_at,
                Submission.created_at <= close_of())


def _assignment_from() -> Any:
    return (select(Assignment.id).select_from(Assignment)
            .join(AssignmentProblem, AssignmentProblem.assignment_id == Assignment.id)
            .join(CourseMember, CourseMember.course_id == Assignment.course_id))


def staff_sees(s: Session, viewer_id: int, submission_id: int) -> bool:
    """Whether the viewer is staff of a course an assignment of which the submission counts
    for."""
    staff = aliased(CourseMember)
    q = (_assignment_from().join(Submission, Submission.id == submission_id)
         .join(staff, staff.course_id == Assignment.course_id)
         .where(counts_for(), staff.user_id == viewer_id,
                staff.role.in_(("instructor", "ta"))).limit(1))
    return s.execute(q).first() is not None


@dataclass(frozen=True)
class OpenExam:
    problem_id: int
    opens_at: datetime
    closes_at: datetime


def open_exams(s: Session, user_id: int, now: datetime | None = None) -> list[OpenExam]:
    """The exam-mode assignments not closed yet, per problem, in which the user is a learner."""
    now = now or utcnow()
    close = close_of()
    rows = s.execute(
        select(AssignmentProblem.problem_id, Assignment.opens_at, close)
        .select_from(Assignment)
        .join(AssignmentProblem, AssignmentProblem.assignment_id == Assignment.id)
        .join(CourseMember, CourseMember.course_id == Assignment.course_id)
        .where(CourseMember.user_id == user_id, CourseMember.role == "learner",
               Assignment.feedback == EXAM, close > now)).all()
    return [OpenExam(pid, opens, _aware(closes)) for pid, opens, closes in rows]


def veil_until(exams: list[OpenExam], *, problem_id: int, created_at: datetime,
               mode: str) -> datetime | None:
    """When a submission's details show to its author (None: now), given their open exams."""
    if mode != "submit":
        return None
    ends = [e.closes_at for e in exams
            if e.problem_id == problem_id and e.opens_at <= created_at <= e.closes_at]
    return max(ends) if ends else None


def veil(view: dict[str, Any], until: datetime) -> dict[str, Any]:
    """The submission as its author sees it during an exam: the verdict, nothing per test."""
    out = dict(view)
    out["score"] = None
    out["veiled_until"] = until.isoformat()
    if "result" in out:
        result = out.get("result")
        out["result"] = None if result is None else {
            "verdict": result.get("verdict"), "score": {}, "message": None, "tests": [],
            "diagnosis": [], "notes": [], "environment": result.get("environment")}
        out["progress"] = None
        out["judgements"] = [{k: v for k, v in j.items() if k != "score"}
                             for j in out.get("judgements") or []]
    return out


def _aware(value: Any) -> datetime:
    """coalesce() of UTC columns comes back as text or naive on SQLite."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
