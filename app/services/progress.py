"""What users have achieved: acceptance rates, solved marks, the leaderboard, and the
reference solution that an accept unlocks.

The rules, in one place:
- only judged submissions of mode "submit" count (a Run checks the samples, it proves
  nothing); their current verdict counts (after a rejudge, the new one);
- a problem is solved by a user who has an Accepted submission of it;
- the acceptance rate of a problem is its Accepted submissions over its judged ones;
- the leaderboard ranks by problems solved, then by the time the user reached that number
  (the latest of their first accepts: who got there first ranks higher), then by the first
  accept of all; times are those of the submissions;
- the reference solution of a problem is shown to those who solved it, and to admins.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case, func, select

from app.context import Context
from app.db.models import Problem, Submission, User
from app.services import problems
from app.services.errors import Forbidden
from app.services.users import UserView

ACCEPTED = "AC"


def _counted():  # noqa: ANN202
    return (Submission.mode == "submit") & (Submission.status == "done")


def problem_stats(ctx: Context) -> dict[str, dict[str, Any]]:
    """Per problem slug: judged submissions, accepted ones, distinct solvers, and the
    acceptance rate (None before the first judged submission)."""
    accepted = func.sum(case((Submission.verdict == ACCEPTED, 1), else_=0))
    with ctx.db.transaction() as s:
        rows = s.execute(
            select(Problem.slug, func.count(Submission.id), accepted)
            .join(Submission, Submission.problem_id == Problem.id)
            .where(_counted())
            .group_by(Problem.slug)).all()
        solver_rows = s.execute(
            select(Problem.slug, func.count(func.distinct(Submission.user_id)))
            .join(Submission, Submission.problem_id == Problem.id)
            .where(_counted(), Submission.verdict == ACCEPTED)
            .group_by(Problem.slug)).all()
    solved_by = {slug: int(n) for slug, n in solver_rows}
    out: dict[str, dict[str, Any]] = {}
    for slug, total, acc in rows:
        total, acc = int(total), int(acc or 0)
        out[slug] = {"submissions": total, "accepted": acc,
                     "solvers": solved_by.get(slug, 0),
                     "acceptance": (acc / total) if total else None}
    return out


def _user_slugs(ctx: Context, user: UserView | None, *where: Any) -> set[str]:
    """Problems with a counted submission of the user's matching `where`."""
    if user is None:
        return set()
    with ctx.db.transaction() as s:
        return set(s.scalars(
            select(Problem.slug).join(Submission, Submission.problem_id == Problem.id)
            .where(_counted(), Submission.user_id == user.id, *where).distinct()))


def solved_slugs(ctx: Context, user: UserView | None) -> set[str]:
    return _user_slugs(ctx, user, Submission.verdict == ACCEPTED)


def attempted_slugs(ctx: Context, user: UserView | None) -> set[str]:
    """Problems the user submitted to (judged), solved or not."""
    return _user_slugs(ctx, user)


def has_solved(ctx: Context, user: UserView | None, slug: str) -> bool:
    if user is None:
        return False
    with ctx.db.transaction() as s:
        return s.scalar(
            select(Submission.id).join(Problem, Problem.id == Submission.problem_id)
            .where(_counted(), Submission.user_id == user.id, Problem.slug == slug,
                   Submission.verdict == ACCEPTED).limit(1)) is not None


def may_see_solution(ctx: Context, user: UserView | None, slug: str) -> bool:
    return user is not None and (user.is_admin or has_solved(ctx, user, slug))


def solution(ctx: Context, user: UserView | None, slug: str) -> str:
    """The reference solution's source, for those who solved the problem (and admins)."""
    problems.current_version_id(ctx, slug)  # NotFound for an unknown problem
    if not may_see_solution(ctx, user, slug):
        raise Forbidden("the reference solution is shown once you have solved the problem")
    return problems.reference_source(ctx, slug)


def leaderboard(ctx: Context, limit: int = 100) -> list[dict[str, Any]]:
    """Users with at least one accept, best first: {rank, username, solved, first_accept,
    reached_at} (rank is shared by equal (solved, reached_at))."""
    first = (select(Submission.user_id.label("user_id"),
                    Submission.problem_id.label("problem_id"),
                    func.min(Submission.created_at).label("at"))
             .where(_counted(), Submission.verdict == ACCEPTED)
             .group_by(Submission.user_id, Submission.problem_id)).subquery()
    solved = func.count(first.c.problem_id)
    reached = func.max(first.c.at)
    earliest = func.min(first.c.at)
    with ctx.db.transaction() as s:
        rows = s.execute(
            select(User.username, solved, reached, earliest)
            .join(first, first.c.user_id == User.id)
            .group_by(User.id, User.username)
            .order_by(solved.desc(), reached.asc(), User.id.asc())
            .limit(limit)).all()
    out: list[dict[str, Any]] = []
    for i, (username, n, reached_at, first_at) in enumerate(rows):
        key = (int(n), _aware(reached_at))
        rank = out[-1]["rank"] if out and out[-1]["_key"] == key else i + 1
        out.append({"rank": rank, "username": username, "solved": int(n),
                    "reached_at": _aware(reached_at), "first_accept": _aware(first_at),
                    "_key": key})
    for row in out:
        del row["_key"]
    return out


def _aware(value: Any) -> datetime | None:
    """Aggregates of a UTC column come back as the column's type on PostgreSQL, but as
    text or naive datetimes on SQLite."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
