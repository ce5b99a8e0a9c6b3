"""Judge workers: claim -> load the package version -> judge -> write the result under the
fence, renewing the lease meanwhile. Threads in `serve` (embedded) or in `tensorjudge worker`
processes on any machine that reaches the database."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta
from typing import Any

from app.context import Context
from app.db.models import utcnow
from app.notify import PgListener
from app.services import problems, queue
from app.services.queue import Job
from judge import Timing, aggregate

log = logging.getLogger("tensorjudge.worker")

# How long a judge process's start waits for its first spare (Startup.begin).
QUICK_READY_WAIT_S = 2.0

# judge.judge's shape:
# (package, code, sandbox, *, samples_only, on_test, split) -> JudgeResult
JudgeFn = Callable[..., Any]


def _default_judge() -> JudgeFn:
    from judge import judge

    return judge


class LeaseKeeper(threading.Thread):
    """Renews a job's lease every third of the lease time until stopped or lost."""

    def __init__(self, ctx: Context, job: Job):
        super().__init__(name=f"lease-{job.submission_id}", daemon=True)
        self.ctx, self.job = ctx, job
        self.done = threading.Event()
        self.lost = False

    def run(self) -> None:
        every = self.ctx.settings.lease_seconds / 3
        while not self.done.wait(every):
            try:
                if not queue.renew(self.ctx, self.job):
                    self.lost = True
                    log.warning("lease lost while judging",
                                extra={"submission": self.job.submission_id,
                                       "worker": self.job.worker})
                    return
            except Exception as e:  # noqa: BLE001 - try again next time; the fence decides
                log.warning("lease renewal failed", extra={"error": str(e)})

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=5)


class ProgressWriter(threading.Thread):
    """Publishes tests as they are judged, off the judging path: the judge hands over the
    latest list and goes on; this writes it at most every `every` seconds."""

    def __init__(self, ctx: Context, job: Job, every: float = 0.1):
        super().__init__(name=f"progress-{job.submission_id}", daemon=True)
        self.ctx, self.job, self.every = ctx, job, every
        self.tests: dict[int, dict[str, Any]] = {}
        self.changed = threading.Event()
        self.done = threading.Event()
        self._lock = threading.Lock()

    def on_test(self, index: int, test: Any) -> None:
        with self._lock:
            self.tests[index] = test.to_dict()
        self.changed.set()

    def run(self) -> None:
        while not self.done.is_set():
            if not self.changed.wait(0.5):
                continue
            self.changed.clear()
            with self._lock:
                # With `index`: tests judged in two sandboxes at once arrive out of order.
                snapshot = [{**self.tests[i], "index": i} for i in sorted(self.tests)]
            try:
                if not queue.progress(self.ctx, self.job, snapshot):
                    return
            except Exception as e:  # noqa: BLE001 - progress is a courtesy
                log.debug("progress not written", extra={"error": str(e)})
            self.done.wait(self.every)

    def stop(self) -> None:
        self.done.set()
        self.changed.set()
        self.join(timeout=5)


class WorkerThread(threading.Thread):
    def __init__(self, pool: WorkerPool, name: str, *, quick_only: bool = False):
        super().__init__(name=name, daemon=True)
        self.pool, self.ctx = pool, pool.ctx
        self.quick_only = quick_only
        self.current: int | None = None
        self.job: Job | None = None
        self.judged = 0

    def run(self) -> None:
        ctx, stop = self.ctx, self.pool.stopping
        backoff = 0.5
        while not stop.is_set():
            seen = ctx.hub.queue_seq
            slow_only = self._lane_free()
            try:
                # A claim and the thread's `current` change together for the other threads
                # of the process (`_may_split`): between the two, another thread's job
                # would find this one idle and be cut in two.
                with self.pool.claims:
                    job = queue.claim(ctx, self.name, quick_only=self.quick_only,
                                      slow_only=slow_only)
                    if job is not None:
                        self.current = job.submission_id
                backoff = 0.5
            except Exception as e:  # noqa: BLE001 - the database may come back
                log.error("claim failed", extra={"worker": self.name, "error": str(e)})
                stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            if job is not None:
                self.process(job)
                continue
            ctx.hub.wait_queue(seen, self._idle_timeout(slow_only))

    def _lane_free(self) -> bool:
        """Whether a quick-lane worker of this process is free to take the submissions
        without JAX (then this one, not of the lane, leaves them to it)."""
        return not self.quick_only and any(
            t.quick_only and t.current is None for t in self.pool.threads)

    def _idle_timeout(self, slow_only: bool) -> float:
        timeout = self.ctx.settings.poll_seconds
        try:
            due = queue.next_due(self.ctx, quick_only=self.quick_only, slow_only=slow_only)
        except Exception:  # noqa: BLE001
            return timeout
        if due is not None:
            timeout = min(timeout, max(0.02, (due - utcnow()).total_seconds() + 0.01))
        return timeout

    def process(self, job: Job) -> None:
        self.current, self.job = job.submission_id, job
        with self.pool.judgement():
            outcome, verdict, judge_ms = self._judge_and_write(job)
        self.current, self.job = None, None
        self.judged += outcome == "done"
        log.info("judged", extra={"submission": job.submission_id, "worker": self.name,
                                  "verdict": verdict, "outcome": outcome,
                                  "ms": round(judge_ms, 1)})

    def _judge_and_write(self, job: Job) -> tuple[str, str, float]:
        """The judgement and the writing of its result: (outcome, verdict, judge_ms)."""
        ctx = self.ctx
        t0 = time.monotonic()
        log.info("judging", extra={"submission": job.submission_id, "worker": self.name,
                                   "attempt": job.attempts, "mode": job.mode})
        if job.attempts > ctx.settings.ie_retries + 1:
            result = aggregate([], internal_error=(
                f"judging was interrupted {job.attempts - 1} times (the workers stopped or "
                "lost their lease)")).to_dict()
            timing = Timing()
        else:
            keeper = LeaseKeeper(ctx, job)
            keeper.start()
            progress = ProgressWriter(ctx, job)
            progress.start()
            try:
                package = problems.load_version(ctx, job.version_id)
                with self.pool.serving(package):  # the start-up work gives way meanwhile
                    res = self.pool.judge_fn(package, job.code, self.pool.sandbox,
                                             samples_only=job.mode == "run",
                                             on_test=progress.on_test,
                                             split=self._may_split())
                result = res.to_dict()
                timing = res.timing or Timing()
            except Exception as e:  # noqa: BLE001 - never the user's fault
                log.exception("judging failed", extra={"submission": job.submission_id})
                result = aggregate([], internal_error=f"the worker failed: "
                                   f"{type(e).__name__}: {e}").to_dict()
                timing = Timing()
            finally:
                progress.stop()
                keeper.stop()
        judge_ms = (time.monotonic() - t0) * 1000.0
        result["timing"] = timing.in_queue(job.queue_ms, judge_ms).to_dict()
        return self._complete(job, result, judge_ms), str(result["verdict"]), judge_ms

    def _may_split(self) -> bool:
        """A second sandbox for this job only when no other job of this process is being
        judged and none is waiting (the queue is asked only when splitting is on at all).
        The pool itself cuts only while no other job runs in a sandbox, but a job claimed a
        moment ago may not have reached one yet: on a fresh machine every framework's first
        submission is claimed within milliseconds, and a NumPy one cut in two then paid for
        a second sandbox beside four imports of JAX and PyTorch."""
        if not self.ctx.settings.pool_split:
            return False
        with self.pool.claims:
            if any(t.current is not None for t in self.pool.threads if t is not self):
                return False
        return not queue.has_waiting(self.ctx)

    def _complete(self, job: Job, result: dict[str, Any], judge_ms: float) -> str:
        """Write the result; if the database is briefly away, keep trying while the lease
        lasts (after that another worker owns the submission anyway)."""
        deadline = job.started_at + timedelta(seconds=self.ctx.settings.lease_seconds * 3)
        delay = 0.5
        while True:
            try:
                return queue.complete(self.ctx, job, result, judge_ms)
            except Exception as e:  # noqa: BLE001
                if utcnow() > deadline or self.pool.stopping.is_set():
                    log.error("result not written", extra={"submission": job.submission_id,
                                                           "error": str(e)})
                    return "lost"
                log.warning("result write failed, retrying", extra={"error": str(e)})
                time.sleep(delay)
                delay = min(delay * 2, 10.0)


class WorkerPool:
    """`n` worker threads of this process, their heartbeat, and on PostgreSQL a listener
    that wakes them on NOTIFY."""

    def __init__(self, ctx: Context, n: int, *, kind: str = "standalone", sandbox: Any = None,
                 judge_fn: JudgeFn | None = None, listen: bool = True,
                 quick: int | None = None):
        self.ctx = ctx
        self.kind = kind
        self.stopping = threading.Event()
        # Set once the start-up preparation (compilation caches, a prepared sandbox per kind,
        # trusted outputs) is over, whether it succeeded or not: the judge is then settled.
        self.prepared = threading.Event()
        self.started = 0.0  # when start() was called
        self.prepared_after_s: float | None = None
        self.judge_fn = judge_fn or _default_judge()
        if sandbox is None:
            from judge import open_sandbox

            sandbox = open_sandbox(ctx.settings.sandbox_config(), pooled=True)
        self.sandbox = sandbox
        # The start-up work (judge.Startup), told of every job so as to give way to it.
        self.startup: Any = None
        if hasattr(sandbox, "prewarm"):
            from judge import Startup

            self.startup = Startup(sandbox, self.stopping)
        # The quick lane (`quick`, default the settings' quick_workers; none without workers):
        # threads that claim only submissions without JAX. Those are judged in milliseconds,
        # but would wait behind seconds of compilation whenever the other workers are busy
        # with JAX submissions (a fresh machine's first ones, a class's burst of Flax).
        if quick is None:
            quick = ctx.settings.quick_workers if n > 0 else 0
        self.claims = threading.Lock()  # see WorkerThread.run
        self.threads = [WorkerThread(self, queue.worker_name(i)) for i in range(n)]
        self.threads += [WorkerThread(self, queue.worker_name(n + i), quick_only=True)
                         for i in range(quick)]
        self.listener: PgListener | None = None
        if listen and ctx.db.is_postgres:
            self.listener = PgListener(ctx.db.libpq_conninfo(), ctx.hub, self.stopping)
        self._beat = threading.Thread(target=self._heartbeat, name="heartbeat", daemon=True)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.threads]

    def start(self) -> None:
        self.started = time.monotonic()
        if self.startup is not None:
            # Before `serve` answers: a NumPy submission's sandbox, ready in moments (and
            # each framework's libraries being imported for the first of its submissions).
            self.startup.begin(wait_s=QUICK_READY_WAIT_S,
                               import_ahead=self.ctx.settings.import_ahead)
        queue.register_workers(self.ctx, self.names, self.kind)
        if self.listener is not None:
            self.listener.start()
            self.listener.ready.wait(5)
        for t in self.threads:
            t.start()
        self._beat.start()
        if hasattr(self.sandbox, "prewarm"):
            threading.Thread(target=self._prepare_sandboxes, name="pool-prepare",
                             daemon=True).start()
        else:
            self._prepared()
        log.info("workers started", extra={"workers": self.names, "kind": self.kind})

    def _prepared(self) -> None:
        self.prepared_after_s = time.monotonic() - self.started
        self.prepared.set()

    def _prepare_sandboxes(self) -> None:
        try:
            self._prepare_all()
        except Exception as e:  # noqa: BLE001 - the pool then prepares on demand
            log.warning("sandbox preparation stopped", extra={"error": str(e)})
        finally:
            self._prepared()

    def _prepare_all(self) -> None:
        """The judge's start-up work for every current problem (judge.prepare_problems)."""
        from judge import prepare_problems

        try:
            packages = problems.current_packages(self.ctx)
        except Exception as e:  # noqa: BLE001 - the pool then fills on demand
            log.warning("cannot list problems to prepare sandboxes", extra={"error": str(e)})
            return
        prepare_problems(self.sandbox, packages, self.stopping, self.startup)

    def judgement(self) -> AbstractContextManager[Any]:
        """Around one judgement and the writing of its result: the sandbox pool's upkeep that
        would compete with it waits (SandboxPool.judgement)."""
        judgement = getattr(self.sandbox, "judgement", None)
        return nullcontext() if judgement is None else judgement()

    def serving(self, package: Any) -> AbstractContextManager[Any]:
        """Around one judgement: the start-up work gives way to it."""
        return nullcontext() if self.startup is None else self.startup.serving(package)

    def _heartbeat(self) -> None:
        while not self.stopping.wait(self.ctx.settings.heartbeat_seconds):
            try:
                queue.heartbeat(self.ctx, {t.name: (t.current, t.judged)
                                           for t in self.threads})
            except Exception as e:  # noqa: BLE001
                log.warning("heartbeat failed", extra={"error": str(e)})

    def abandon(self) -> None:
        """Hand the submissions being judged back to the queue at once (a hard stop)."""
        for t in self.threads:
            job = t.job
            if job is not None:
                try:
                    queue.release(self.ctx, job)
                except Exception as e:  # noqa: BLE001 - the lease will expire instead
                    log.warning("not released", extra={"submission": job.submission_id,
                                                       "error": str(e)})

    def stop(self, timeout: float | None = None) -> None:
        """Stop claiming; wait (up to `timeout` seconds, else for as long as it takes) for
        the submissions being judged to finish."""
        self.stopping.set()
        self.ctx.hub.queue_changed()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self.threads:
            # Joined in slices: a signal handler in the main thread still gets to run.
            while t.is_alive() and (deadline is None or time.monotonic() < deadline):
                t.join(0.5)
        if hasattr(self.sandbox, "close"):
            # After the jobs: it ends the threads their sandboxes may die with.
            left = 600.0 if deadline is None else max(deadline - time.monotonic(), 0.0)
            self.sandbox.close(drain_s=left)
        try:
            queue.unregister_workers(self.ctx, self.names)
        except Exception as e:  # noqa: BLE001
            log.warning("workers not unregistered", extra={"error": str(e)})
        log.info("workers stopped", extra={"workers": self.names})
