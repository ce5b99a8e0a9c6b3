"""app.services.progress on both databases: acceptance rates, solved marks, the leaderboard
and who may see the reference solution."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app.db.models import Problem, ProblemVersion, Submission, utcnow
from app.services import progress, users
from app.services.errors import Forbidden, NotFound
from tests.app.tj_testlib import PASSWORD

BASE = utcnow() - timedelta(hours=1)


def add(ctx, user, verdict, *, mode="submit", status="done", minutes=0, slug="double"):
    """A judged submission written straight into the table (no judge involved)."""
    with ctx.db.transaction() as s:
        pid = s.scalar(select(Problem.id).where(Problem.slug == slug))
        vid = s.scalar(select(ProblemVersion.id).where(ProblemVersion.problem_id == pid))
        at = BASE + timedelta(minutes=minutes)
        sub = Submission(user_id=user.id, problem_id=pid, version_id=vid, mode=mode,
                         code="x", status=status, verdict=verdict if status == "done" else None,
                         created_at=at, queued_at=at, available_at=at)
        s.add(sub)
        s.flush()
        return sub.id


@pytest.fixture
def people(ctx):
    return {n: users.create_user(ctx, n, PASSWORD) for n in ("ann", "ben", "cat", "dan")}


@pytest.fixture
def second_problem(ctx, tmp_path):
    from app.services import problems
    from tests.app.tj_testlib import DOUBLE, copy_package

    problems.store(ctx, copy_package(DOUBLE, tmp_path, "triple"), mode="add", validator=None)
    return "triple"


def test_acceptance_counts_judged_submits_only(ctx, people):
    ann, ben = people["ann"], people["ben"]
    add(ctx, ann, "WA")
    add(ctx, ann, "AC")
    add(ctx, ben, "TLE")
    add(ctx, ben, "AC", mode="run")  # a Run does not count
    add(ctx, ben, None, status="queued")  # nor does anything not judged yet
    st = progress.problem_stats(ctx)["double"]
    assert st == {"submissions": 3, "accepted": 1, "solvers": 1, "acceptance": 1 / 3}
    assert progress.solved_slugs(ctx, ann) == {"double"}
    assert progress.solved_slugs(ctx, ben) == set()
    assert progress.attempted_slugs(ctx, ben) == {"double"}
    assert progress.solved_slugs(ctx, None) == set()


def test_a_rejudge_changes_what_counts(ctx, people):
    sid = add(ctx, people["ann"], "AC")
    assert progress.has_solved(ctx, people["ann"], "double")
    with ctx.db.transaction() as s:
        s.execute(update(Submission).where(Submission.id == sid).values(verdict="WA"))
    assert not progress.has_solved(ctx, people["ann"], "double")
    assert progress.problem_stats(ctx)["double"]["accepted"] == 0


def test_leaderboard_order(ctx, people, second_problem):
    ann, ben, cat, dan = (people[n] for n in ("ann", "ben", "cat", "dan"))
    # ann: two problems, the second at minute 30. ben: two problems, the second at minute 20
    # (reached two first: ranks above ann). cat: one. dan: nothing accepted.
    add(ctx, ann, "AC", minutes=1)
    add(ctx, ann, "AC", minutes=30, slug=second_problem)
    add(ctx, ann, "AC", minutes=40)  # a second accept of a solved problem changes nothing
    add(ctx, ben, "WA", minutes=0)
    add(ctx, ben, "AC", minutes=10)
    add(ctx, ben, "AC", minutes=20, slug=second_problem)
    add(ctx, cat, "AC", minutes=5)
    add(ctx, dan, "WA", minutes=5)
    rows = progress.leaderboard(ctx)
    assert [(r["username"], r["solved"], r["rank"]) for r in rows] == [
        ("ben", 2, 1), ("ann", 2, 2), ("cat", 1, 3)]
    assert rows[1]["first_accept"] < rows[0]["first_accept"]  # ann accepted first of all
    assert rows[0]["reached_at"] < rows[1]["reached_at"]
    assert all(r["first_accept"].tzinfo is not None for r in rows)


def test_leaderboard_ties_share_a_rank(ctx, people):
    add(ctx, people["ann"], "AC", minutes=3)
    add(ctx, people["ben"], "AC", minutes=3)
    rows = progress.leaderboard(ctx)
    assert [r["rank"] for r in rows] == [1, 1]


def test_solution_rules(ctx, people):
    ann, ben = people["ann"], people["ben"]
    add(ctx, ann, "AC")
    assert "reshape" in progress.solution(ctx, ann, "double")
    with pytest.raises(Forbidden):
        progress.solution(ctx, ben, "double")
    with pytest.raises(Forbidden):
        progress.solution(ctx, None, "double")
    root = users.create_user(ctx, "root", PASSWORD, admin=True)
    assert progress.may_see_solution(ctx, root, "double")
    with pytest.raises(NotFound):
        progress.solution(ctx, ann, "nope")
