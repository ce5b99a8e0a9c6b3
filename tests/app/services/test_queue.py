"""The queue: atomic claims, leases, fencing, IE retries, wake-ups. On both databases."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import func, select

from app.context import Context
from app.db.models import Judgement, Submission
from app.notify import Hub
from app.services import queue, submissions, users
from tests.app.tj_testlib import AC_CODE, PASSWORD, FakeJudge, slow_checks_for


@pytest.fixture
def user(ctx):
    return users.create_user(ctx, "alice", PASSWORD)


def make(ctx, user, n=1, mode="submit"):
    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000})
    return [submissions.create(ctx, user, "double", AC_CODE, mode)["id"] for _ in range(n)]


def judgements(ctx, sid=None):
    with ctx.db.transaction() as s:
        q = select(Judgement)
        if sid is not None:
            q = q.where(Judgement.submission_id == sid)
        return list(s.scalars(q.order_by(Judgement.id)))


def row(ctx, sid):
    with ctx.db.transaction() as s:
        return s.get(Submission, sid)


def result(verdict="AC"):
    return {"verdict": verdict, "score": {"passed": 1, "total": 1}, "message": None,
            "tests": [{"name": "t", "verdict": verdict, "time_ms": 1.0}]}


def test_claims_are_fifo(ctx, user):
    ids = make(ctx, user, 3)
    got = [queue.claim(ctx, "w").submission_id for _ in ids]
    assert got == ids
    assert queue.claim(ctx, "w") is None


JAX_CODE = ("import jax.numpy as jnp\n\n\n"
            "def double(x):\n    return (2 * jnp.asarray(x)).reshape(-1)\n")


def test_a_quick_submission_is_claimed_before_recent_jax_ones(ctx, user):
    """A submission without JAX (milliseconds) goes ahead of JAX ones (which may compile for
    seconds) posted up to QUICK_HEAD_START before it; not ahead of older ones; and among
    themselves, each class keeps its order."""
    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000})
    jax_first = submissions.create(ctx, user, "double", JAX_CODE)["id"]
    jax_second = submissions.create(ctx, user, "double", JAX_CODE)["id"]
    quick = make(ctx, user, 2)
    with ctx.db.transaction() as s:  # a JAX submission posted longer ago than the head start
        s.get(Submission, jax_first).available_at -= submissions.QUICK_HEAD_START * 2
    got = [queue.claim(ctx, "w").submission_id for _ in range(4)]
    assert got == [jax_first, *quick, jax_second]


def test_concurrent_claims_take_each_submission_once(ctx, user):
    ids = make(ctx, user, 40)
    taken: list[int] = []
    lock = threading.Lock()

    def claimer(i):
        while (job := queue.claim(ctx, f"w{i}")) is not None:
            with lock:
                taken.append(job.submission_id)

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == ids  # every one, none twice


def test_a_lease_is_respected_until_it_expires(ctx, user, configure):
    configure(lease_seconds=0.3)
    (sid,) = make(ctx, user)
    a = queue.claim(ctx, "a")
    assert queue.claim(ctx, "b") is None
    time.sleep(0.4)
    b = queue.claim(ctx, "b")
    assert b is not None and b.submission_id == sid
    assert b.fence == a.fence + 1 and b.attempts == 2


def test_renewal_keeps_the_lease(ctx, user, configure):
    configure(lease_seconds=0.3)
    make(ctx, user)
    a = queue.claim(ctx, "a")
    for _ in range(6):
        time.sleep(0.1)
        assert queue.renew(ctx, a)
        assert queue.claim(ctx, "b") is None


def test_fencing_a_presumed_dead_worker_cannot_write(ctx, user, configure):
    configure(lease_seconds=0.2)
    (sid,) = make(ctx, user)
    a = queue.claim(ctx, "a")
    time.sleep(0.3)
    b = queue.claim(ctx, "b")
    # a wakes up late: no renewal, no result.
    assert not queue.renew(ctx, a)
    assert queue.complete(ctx, a, result("WA"), 1.0) == "lost"
    assert queue.complete(ctx, b, result("AC"), 1.0) == "done"
    assert queue.complete(ctx, a, result("WA"), 1.0) == "lost"
    (j,) = judgements(ctx, sid)
    assert j.worker == "b" and j.verdict == "AC" and j.fence == b.fence
    s = row(ctx, sid)
    assert s.status == "done" and s.verdict == "AC" and s.lease_owner is None


def test_non_finite_numbers_are_stored_as_null(ctx, user):
    (sid,) = make(ctx, user)
    job = queue.claim(ctx, "w")
    res = result("WA")
    res["tests"][0].update(max_abs_err=float("inf"), max_rel_err=float("nan"))
    res["got"] = [float("nan"), 1.0]
    assert queue.complete(ctx, job, res, 1.0) == "done"
    (j,) = judgements(ctx, sid)
    assert j.result["got"] == [None, 1.0]
    assert j.result["tests"][0]["max_abs_err"] is None


def test_the_holder_writes_once(ctx, user):
    (sid,) = make(ctx, user)
    a = queue.claim(ctx, "a")
    assert queue.complete(ctx, a, result("AC"), 1.0) == "done"
    assert queue.complete(ctx, a, result("WA"), 1.0) == "lost"
    assert [j.verdict for j in judgements(ctx, sid)] == ["AC"]


def test_rejudge_while_running_fences_the_old_run(ctx, user):
    (sid,) = make(ctx, user)
    a = queue.claim(ctx, "a")
    submissions.rejudge(ctx, [sid])
    assert queue.complete(ctx, a, result("WA"), 1.0) == "lost"
    b = queue.claim(ctx, "b")
    assert b.fence == a.fence + 2 and b.attempts == 1
    assert queue.complete(ctx, b, result("AC"), 1.0) == "done"
    assert [j.verdict for j in judgements(ctx, sid)] == ["AC"]


def test_release_returns_a_submission_untouched(ctx, user):
    (sid,) = make(ctx, user)
    a = queue.claim(ctx, "a")
    assert queue.release(ctx, a)
    s = row(ctx, sid)
    assert s.status == "queued" and s.attempts == 0
    assert queue.claim(ctx, "b").submission_id == sid


def wait_done(ctx, sid, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = row(ctx, sid)
        if s.status == "done":
            return s
        time.sleep(0.02)
    raise AssertionError(f"submission {sid} not done: {row(ctx, sid).status}")


def test_the_quick_lane_claims_only_submissions_without_jax(ctx, user):
    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000})
    jax = submissions.create(ctx, user, "double", JAX_CODE)["id"]
    assert queue.claim(ctx, "lane", quick_only=True) is None
    (quick,) = make(ctx, user)
    assert queue.claim(ctx, "lane", quick_only=True).submission_id == quick
    assert queue.claim(ctx, "lane", quick_only=True) is None
    assert queue.claim(ctx, "w").submission_id == jax
    assert row(ctx, quick).quick and not row(ctx, jax).quick


def test_a_submission_without_jax_does_not_wait_behind_busy_workers(ctx, user, workers):
    """While the only worker judges a JAX submission for long (compiling, say), one without
    JAX posted after it is judged by the quick lane; the lane never takes a JAX one."""
    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000})
    release = threading.Event()
    fake = FakeJudge("AC")

    def judge_fn(package, code, sandbox, **kw):  # noqa: ANN001, ANN003, ANN202
        if "jax" in code:
            release.wait(30)
        return fake(package, code, sandbox, **kw)

    pool = workers(1, judge_fn=judge_fn, quick=1)
    assert len(pool.threads) == 2
    try:
        jax = [submissions.create(ctx, user, "double", JAX_CODE)["id"] for _ in range(2)]
        deadline = time.monotonic() + 5
        while row(ctx, jax[0]).status != "running" and time.monotonic() < deadline:
            time.sleep(0.02)
        (quick,) = make(ctx, user)
        assert wait_done(ctx, quick, timeout=10).verdict == "AC"
        assert row(ctx, jax[0]).status == "running"
        assert row(ctx, jax[1]).status == "queued"
    finally:
        release.set()
    for sid in jax:
        assert wait_done(ctx, sid).verdict == "AC"


def test_a_worker_leaves_submissions_without_jax_to_its_free_quick_lane(ctx, user):
    """A worker claims only JAX submissions while a quick-lane worker of its process is
    free; once the lane is busy, any (and a pool without a lane is never held back)."""
    from app.worker import WorkerPool

    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000})
    pool = WorkerPool(ctx, 1, sandbox=object(), judge_fn=FakeJudge("AC"), quick=1,
                      listen=False)
    regular, lane = pool.threads
    (quick,) = make(ctx, user)
    assert regular._lane_free() and not lane._lane_free()
    assert queue.claim(ctx, regular.name, slow_only=regular._lane_free()) is None
    lane.current = 1  # the lane judges something
    assert not regular._lane_free()
    assert queue.claim(ctx, regular.name, slow_only=regular._lane_free()).submission_id == quick
    (alone,) = WorkerPool(ctx, 1, sandbox=object(), judge_fn=FakeJudge("AC"), quick=0,
                          listen=False).threads
    assert not alone._lane_free()


def test_what_a_lane_cannot_claim_is_not_due_for_it(ctx, user):
    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000})
    jax = submissions.create(ctx, user, "double", JAX_CODE)["id"]
    assert queue.next_due(ctx) == row(ctx, jax).available_at
    assert queue.next_due(ctx, quick_only=True) is None
    (quick,) = make(ctx, user)
    assert queue.next_due(ctx, quick_only=True) == row(ctx, quick).available_at
    assert queue.next_due(ctx, slow_only=True) == row(ctx, jax).available_at


def test_the_quick_lane_does_not_poll_while_a_jax_submission_waits(ctx, user, workers,
                                                                   monkeypatch):
    """A JAX submission waiting for a worker is nothing the lane can take: the lane sleeps
    until the queue changes (it polled every 20 ms, two transactions each time)."""
    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000,
                                                   "poll_seconds": 5.0})
    claims: list[str] = []
    real = queue.claim

    def counted(c, worker, **kw):  # noqa: ANN001, ANN003, ANN202
        claims.append(worker)
        return real(c, worker, **kw)

    monkeypatch.setattr(queue, "claim", counted)
    workers(0, judge_fn=FakeJudge("AC"), quick=1)
    submissions.create(ctx, user, "double", JAX_CODE)
    time.sleep(0.1)
    before = len(claims)
    time.sleep(0.6)
    assert len(claims) - before <= 2


def test_ie_is_retried_then_the_real_verdict_is_kept(ctx, user, workers):
    judge = FakeJudge("IE", "IE", "AC")
    workers(1, judge_fn=judge)
    (sid,) = make(ctx, user)
    s = wait_done(ctx, sid)
    assert s.verdict == "AC" and s.attempts == 3
    assert len(judge.calls) == 3
    (j,) = judgements(ctx, sid)
    assert j.attempts == 3


def test_ie_is_shown_after_three_retries(ctx, user, workers):
    judge = FakeJudge("IE")
    workers(1, judge_fn=judge)
    (sid,) = make(ctx, user)
    s = wait_done(ctx, sid)
    assert s.verdict == "IE" and len(judge.calls) == 4  # 1 + 3 retries
    (j,) = judgements(ctx, sid)
    assert j.result["message"] == "fake judge fault"


def test_a_submission_that_keeps_killing_workers_ends_as_ie(ctx, user, configure, workers):
    configure(lease_seconds=0.05)
    (sid,) = make(ctx, user)
    for i in range(4):  # four workers die while judging it
        assert queue.claim(ctx, f"dead{i}") is not None
        time.sleep(0.08)
    configure(lease_seconds=30)
    judge = FakeJudge("AC")
    workers(1, judge_fn=judge)
    s = wait_done(ctx, sid)
    assert s.verdict == "IE" and judge.calls == []
    assert "interrupted 4 times" in judgements(ctx, sid)[0].result["message"]


def test_many_workers_every_submission_exactly_one_verdict(ctx, user, workers):
    ids = make(ctx, user, 40)
    judge = FakeJudge("AC", delay=0.005)
    workers(3, judge_fn=judge)
    workers(2, judge_fn=judge)
    for sid in ids:
        wait_done(ctx, sid)
    js = judgements(ctx)
    assert sorted(j.submission_id for j in js) == ids
    assert len(judge.calls) == 40


def test_a_worker_splits_a_submit_only_when_nothing_else_waits(ctx, user, workers):
    ids = make(ctx, user, 3)
    judge = FakeJudge("AC")
    workers(1, judge_fn=judge)
    for sid in ids:
        wait_done(ctx, sid)
    # A second sandbox for the first two would have been taken from those still queued.
    assert judge.splits == [False, False, True]


def test_a_worker_splits_no_submit_while_another_of_its_process_judges(ctx, user, workers):
    """The second worker's job finds nothing waiting, but the first worker's job may not have
    reached a sandbox yet (the pool cannot see it): no second sandbox for it either."""
    ids = make(ctx, user, 2)
    judge = FakeJudge("AC")
    judge.release.clear()
    workers(2, judge_fn=judge)
    deadline = time.monotonic() + 10
    while len(judge.calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    judge.release.set()
    for sid in ids:
        wait_done(ctx, sid)
    assert judge.splits == [False, False]
    (alone,) = make(ctx, user, 1)
    wait_done(ctx, alone)
    assert judge.splits[-1] is True  # alone in its process: cut where the pool can


def _idle(pool):
    """Give the pool's workers time to find the queue empty and go to sleep."""
    time.sleep(0.3)


def test_an_idle_worker_wakes_within_milliseconds(ctx, user, configure, workers):
    configure(poll_seconds=30)
    judge = FakeJudge("AC")
    pool = workers(1, judge_fn=judge)
    _idle(pool)
    t0 = time.monotonic()
    make(ctx, user)
    assert judge.started.wait(5)
    latency = time.monotonic() - t0
    assert latency < 0.25, latency


def test_notify_wakes_a_worker_of_another_process(ctx, user, configure, workers, backend):
    """On PostgreSQL the submitter's NOTIFY reaches a worker that shares no memory with it."""
    if backend != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    configure(poll_seconds=30)
    judge = FakeJudge("AC")
    pool = workers(1, judge_fn=judge)
    _idle(pool)
    elsewhere = Context(ctx.settings, ctx.db, Hub())  # another process: its own hub
    t0 = time.monotonic()
    make(elsewhere, user)
    assert judge.started.wait(5)
    latency = time.monotonic() - t0
    assert latency < 0.25, latency


def test_workers_heartbeat_and_leave(ctx, workers):
    pool = workers(2, judge_fn=FakeJudge("AC"))
    live = queue.live_workers(ctx)
    assert sorted(w["name"] for w in live) == sorted(pool.names)
    pool.stop(timeout=5)
    assert queue.live_workers(ctx) == []


def test_depth_and_stats(ctx, user):
    make(ctx, user, 3)
    job = queue.claim(ctx, "w")
    assert queue.depth(ctx) == {"queued": 2, "running": 1}
    queue.complete(ctx, job, result("WA"), 300.0)
    stats = queue.judgement_stats(ctx)
    assert stats["verdicts"] == {"WA": 1} and stats["count"] == 1
    assert dict(stats["buckets"])[0.25] == 0 and dict(stats["buckets"])[0.5] == 1
    with ctx.db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Judgement)) == 1


def test_a_worker_beside_a_free_quick_lane_leaves_it_the_submissions_without_jax(ctx, user):
    """The quick lane takes the submissions without JAX; a worker of its process, while the
    lane is free, takes only those with JAX, though the others have a head start (and
    without a free lane it takes them in that order)."""
    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000})
    (quick,) = make(ctx, user)
    jax = submissions.create(ctx, user, "double", JAX_CODE)["id"]
    assert queue.claim(ctx, "w", slow_only=True).submission_id == jax
    assert queue.claim(ctx, "w", slow_only=True) is None
    assert queue.claim(ctx, "w").submission_id == quick


def test_submissions_join_the_queue_in_the_order_they_arrived(ctx, user, monkeypatch):
    ctx.settings = ctx.settings.model_copy(update={"rate_limit": 10_000})
    first_code = AC_CODE + "\n# first\n"
    slow_checks_for(monkeypatch, first_code, 0.5)
    first, second = ctx.arrivals.enter(), ctx.arrivals.enter()
    ids: dict[str, int] = {}
    t = threading.Thread(target=lambda: ids.setdefault(
        "first", submissions.create(ctx, user, "double", first_code, "submit", first)["id"]))
    t.start()
    ids["second"] = submissions.create(ctx, user, "double", AC_CODE, "submit", second)["id"]
    # The second's insert waited for the first's: a worker claiming now takes the first.
    claimed = queue.claim(ctx, "w")
    t.join()
    assert claimed is not None and claimed.submission_id == ids["first"]
    assert ids["first"] < ids["second"]
    assert row(ctx, ids["first"]).created_at < row(ctx, ids["second"]).created_at
    assert ctx.arrivals.pending == 0


def test_a_stalled_arrival_holds_the_next_ones_a_bounded_time(ctx, user, monkeypatch):
    from app.services import arrivals

    monkeypatch.setattr(arrivals, "TURN_WAIT_S", 0.3)
    stalled = ctx.arrivals.enter()  # a request that never gets to queue its submission
    t0 = time.monotonic()
    sid = submissions.create(ctx, user, "double", AC_CODE, "submit", ctx.arrivals.enter())["id"]
    assert 0.25 < time.monotonic() - t0 < 5
    assert row(ctx, sid).status == "queued"
    ctx.arrivals.leave(stalled)
    # A failed submission leaves its place: the next one does not wait for it.
    monkeypatch.setattr(arrivals, "TURN_WAIT_S", 30.0)
    failed = ctx.arrivals.enter()
    with pytest.raises(Exception, match="empty"):
        submissions.create(ctx, user, "double", "  ", "submit", failed)
    t0 = time.monotonic()
    submissions.create(ctx, user, "double", AC_CODE, "submit", ctx.arrivals.enter())
    assert time.monotonic() - t0 < 15
    assert ctx.arrivals.pending == 0
