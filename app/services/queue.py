"""The judging queue, which is the submissions table.

- claim: atomically take the oldest claimable submission (queued and due, or running with an
  expired lease), under `FOR UPDATE SKIP LOCKED` on PostgreSQL and the database write lock on
  SQLite; the claim bumps the submission's fence and starts a lease.
- renew: the holder extends its lease while it judges.
- complete: writes the judgement only if the fence is still the holder's, so a worker that
  was presumed dead cannot overwrite a newer judgement. A judge fault (IE) goes back to the
  queue until it has been retried `ie_retries` times.

Clocks: leases use the workers' clocks (keep machines NTP-synchronised). Skew only makes a
lease expire early or late; the fence keeps results correct either way.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, case, delete, func, or_, select, true, update
from sqlalchemy.orm import Session

from app.context import Context
from app.db import rowcount
from app.db.models import Judgement, Submission, TestResultRow, WorkerRow, utcnow
from app.notify import QUEUE_CHANNEL, STATUS_CHANNEL, pg_notify

log = logging.getLogger("tensorjudge.queue")


@dataclass(frozen=True)
class Job:
    submission_id: int
    fence: int
    attempts: int
    version_id: int
    mode: str
    code: str
    worker: str
    started_at: datetime
    # When it was submitted or rejudged: its queue wait ends at this claim.
    queued_at: datetime | None = None

    @property
    def queue_ms(self) -> float:
        """The wait from being queued to this claim (0 when unknown; two hosts' clocks may
        disagree, never below 0)."""
        if self.queued_at is None:
            return 0.0
        return max((self.started_at - self.queued_at).total_seconds() * 1000.0, 0.0)


def announce(ctx: Context, *, queue: bool = False, submissions: tuple[int, ...] = ()) -> None:
    """Wake this process's waiters (after commit). Other processes hear the NOTIFYs that
    the same transaction sent (see `notify_in`)."""
    if queue:
        ctx.hub.queue_changed()
    for sid in submissions:
        ctx.hub.submission_changed(sid)


def notify_in(session: Any, *, queue: bool = False, submissions: tuple[int, ...] = ()) -> None:
    if queue:
        pg_notify(session, QUEUE_CHANNEL)
    for sid in submissions:
        pg_notify(session, STATUS_CHANNEL, str(sid))


def _claimable(now: datetime):  # noqa: ANN202
    return or_(
        and_(Submission.status == "queued", Submission.available_at <= now),
        and_(Submission.status == "running", Submission.lease_expires_at < now),
    )


def claim(ctx: Context, worker: str, *, quick_only: bool = False,
          slow_only: bool = False) -> Job | None:
    """The next submission for `worker`, leased to it. `quick_only`: only one without JAX
    (the quick lane's worker). `slow_only`: only one with JAX, for a worker whose process
    has a quick lane free to take the others: this worker holding one of those would keep
    a JAX submission waiting (on a fresh machine, a framework's first Submit waited for
    another's import of PyTorch)."""
    now = utcnow()
    lease = timedelta(seconds=ctx.settings.lease_seconds)
    claimable = and_(_claimable(now), _lane(quick_only, slow_only))
    with ctx.db.transaction() as s:
        sub = s.scalar(
            select(Submission).where(claimable)
            .order_by(Submission.available_at, Submission.id)
            .limit(1).with_for_update(skip_locked=True))
        if sub is None:
            return None
        expired_from = sub.lease_owner if sub.status == "running" else None
        sub.status = "running"
        sub.fence += 1
        sub.attempts += 1
        sub.lease_owner = worker
        sub.lease_expires_at = now + lease
        sub.started_at = now
        sub.progress = None
        job = Job(sub.id, sub.fence, sub.attempts, sub.version_id, sub.mode, sub.code, worker,
                  now, sub.queued_at)
        notify_in(s, submissions=(sub.id,))
    announce(ctx, submissions=(job.submission_id,))
    if expired_from:
        log.warning("lease expired, submission taken over",
                    extra={"submission": job.submission_id, "from": expired_from,
                           "worker": worker, "attempt": job.attempts})
    return job


def _lane(quick_only: bool, slow_only: bool) -> ColumnElement[bool]:
    """The submissions a worker of that lane claims."""
    if quick_only:
        return Submission.quick.is_(True)
    if slow_only:
        return Submission.quick.is_(False)
    return true()


def next_due(ctx: Context, *, quick_only: bool = False, slow_only: bool = False
             ) -> datetime | None:
    """When something not claimable now becomes claimable (a retry's delay, a lease), of
    what `claim` with the same lane takes: a submission of another lane waiting now is not
    due for this worker (else the quick lane would poll every few ms while a JAX one
    waits for a worker)."""
    lane = _lane(quick_only, slow_only)
    with ctx.db.transaction() as s:
        a = s.scalar(select(func.min(Submission.available_at))
                     .where(Submission.status == "queued", lane))
        b = s.scalar(select(func.min(Submission.lease_expires_at))
                     .where(Submission.status == "running", lane))
    times = [t for t in (a, b) if t is not None]
    return min(times) if times else None


def _held(job: Job) -> ColumnElement[bool]:
    """The submission while `job` holds it: running, under this claim's fence."""
    return and_(Submission.id == job.submission_id, Submission.fence == job.fence,
                Submission.status == "running")


def _update_held(s: Session, job: Job, **values: Any) -> bool:
    """Change the submission if `job` still holds it; False when it no longer does."""
    return rowcount(s.execute(update(Submission).where(_held(job)).values(**values))) == 1


def renew(ctx: Context, job: Job) -> bool:
    """Extend the lease; False when it is no longer ours."""
    with ctx.db.transaction() as s:
        return _update_held(s, job, lease_expires_at=utcnow()
                            + timedelta(seconds=ctx.settings.lease_seconds))


def progress(ctx: Context, job: Job, tests: list[dict[str, Any]]) -> bool:
    """Publish the tests judged so far; only the current lease holder can (the fence)."""
    with ctx.db.transaction() as s:
        ok = _update_held(s, job, progress=json_safe(tests))
        if ok:
            notify_in(s, submissions=(job.submission_id,))
    if ok:
        announce(ctx, submissions=(job.submission_id,))
    return ok


def release(ctx: Context, job: Job) -> bool:
    """Give a claimed submission back untouched (a worker shutting down mid-judgement)."""
    with ctx.db.transaction() as s:
        ok = _update_held(s, job, status="queued", lease_owner=None, lease_expires_at=None,
                          progress=None, available_at=utcnow(),
                          attempts=Submission.attempts - 1)
        if ok:
            notify_in(s, queue=True, submissions=(job.submission_id,))
    if ok:
        announce(ctx, queue=True, submissions=(job.submission_id,))
    return ok


def complete(ctx: Context, job: Job, result: dict[str, Any], judge_ms: float) -> str:
    """Record the outcome of a claim. Returns "done", "retry" (an IE put back in the queue)
    or "lost" (the fence moved on: someone else owns the submission now)."""
    now = utcnow()
    result = json_safe(result)
    verdict = result["verdict"]
    with ctx.db.transaction() as s:
        sub = s.scalar(select(Submission)
                       .where(_held(job))
                       .with_for_update())
        if sub is None:
            outcome = "lost"
        elif verdict == "IE" and sub.attempts <= ctx.settings.ie_retries:
            delay = ctx.settings.ie_retry_delay_seconds * sub.attempts
            sub.status = "queued"
            sub.progress = None
            sub.lease_owner = None
            sub.lease_expires_at = None
            sub.available_at = now + timedelta(seconds=delay)
            sub.last_error = (result.get("message") or "internal error")[:4000]
            notify_in(s, queue=True, submissions=(sub.id,))
            outcome = "retry"
        else:
            score = result.get("score") or {}
            judgement = Judgement(
                submission_id=sub.id, version_id=job.version_id, fence=job.fence,
                worker=job.worker, verdict=verdict, passed=int(score.get("passed", 0)),
                total=int(score.get("total", 0)), result=result, attempts=sub.attempts,
                judge_ms=judge_ms, started_at=job.started_at, finished_at=now)
            judgement.tests = [
                TestResultRow(position=i, name=t["name"], verdict=t.get("verdict"),
                              time_ms=t.get("time_ms"), max_abs_err=_finite(t.get("max_abs_err")),
                              max_rel_err=_finite(t.get("max_rel_err")),
                              mismatches=t.get("mismatches"), message=t.get("message"))
                for i, t in enumerate(result.get("tests", []))]
            s.add(judgement)
            sub.status = "done"
            sub.progress = None
            sub.verdict = verdict
            sub.finished_at = now
            sub.lease_owner = None
            sub.lease_expires_at = None
            notify_in(s, submissions=(sub.id,))
            outcome = "done"
    if outcome == "retry":
        announce(ctx, queue=True, submissions=(job.submission_id,))
    elif outcome == "done":
        announce(ctx, submissions=(job.submission_id,))
    return outcome


def _finite(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def json_safe(obj: Any) -> Any:
    """JSON (and PostgreSQL) has no NaN or infinity: those become null."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return _finite(obj)


# --- workers' heartbeats -----------------------------------------------------------------


def worker_name(index: int = 0) -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{index}-{secrets.token_hex(2)}"


def register_workers(ctx: Context, names: list[str], kind: str) -> None:
    now = utcnow()
    with ctx.db.transaction() as s:
        s.execute(delete(WorkerRow).where(WorkerRow.heartbeat_at < now - timedelta(days=1)))
        for name in names:
            s.merge(WorkerRow(name=name, hostname=socket.gethostname(), pid=os.getpid(),
                              kind=kind, started_at=now, heartbeat_at=now, judged=0))


def heartbeat(ctx: Context, states: dict[str, tuple[int | None, int]]) -> None:
    """states: worker name -> (submission being judged, judged so far)."""
    now = utcnow()
    with ctx.db.transaction() as s:
        for name, (current, judged) in states.items():
            s.execute(update(WorkerRow).where(WorkerRow.name == name)
                      .values(heartbeat_at=now, current_submission_id=current, judged=judged))


def unregister_workers(ctx: Context, names: list[str]) -> None:
    with ctx.db.transaction() as s:
        s.execute(delete(WorkerRow).where(WorkerRow.name.in_(names)))


def live_workers(ctx: Context) -> list[dict[str, Any]]:
    cutoff = utcnow() - timedelta(seconds=3 * ctx.settings.heartbeat_seconds)
    with ctx.db.transaction() as s:
        rows = s.scalars(select(WorkerRow).where(WorkerRow.heartbeat_at >= cutoff)
                         .order_by(WorkerRow.name))
        return [{"name": w.name, "kind": w.kind, "hostname": w.hostname,
                 "current_submission": w.current_submission_id, "judged": w.judged,
                 "heartbeat_at": w.heartbeat_at.isoformat()} for w in rows]


# --- numbers -----------------------------------------------------------------------------


def has_waiting(ctx: Context) -> bool:
    """Whether any submission is queued, claimable now or later."""
    with ctx.db.transaction() as s:
        return s.execute(select(Submission.id).where(Submission.status == "queued")
                         .limit(1)).first() is not None


def depth(ctx: Context) -> dict[str, int]:
    with ctx.db.transaction() as s:
        rows = s.execute(select(Submission.status, func.count())
                         .where(Submission.status.in_(("queued", "running")))
                         .group_by(Submission.status)).all()
    out = {"queued": 0, "running": 0}
    out.update({status: int(n) for status, n in rows})
    return out


LATENCY_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


def judgement_stats(ctx: Context) -> dict[str, Any]:
    """Verdict counts and the judging-latency histogram (cumulative, seconds) of every
    judgement ever recorded, whichever process judged it."""
    with ctx.db.transaction() as s:
        verdicts = {v: int(n) for v, n in s.execute(
            select(Judgement.verdict, func.count()).group_by(Judgement.verdict))}
        cols = [func.coalesce(func.sum(case((Judgement.judge_ms <= b * 1000, 1), else_=0)), 0)
                for b in LATENCY_BUCKETS_S]
        row = s.execute(select(func.count(), func.coalesce(func.sum(Judgement.judge_ms), 0.0),
                               *cols)).one()
    count, total_ms, *buckets = row
    return {"verdicts": verdicts, "count": int(count), "sum_s": float(total_ms) / 1000.0,
            "buckets": list(zip(LATENCY_BUCKETS_S, (int(b) for b in buckets), strict=True))}

