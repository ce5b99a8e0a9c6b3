"""A pool of pre-spawned, prepared, single-use sandboxes.

Each sandbox is started ahead of demand, imports its libraries, starts the JAX backend and runs
the problem's judge-owned warm-up; then it waits for exactly one job and is destroyed after it.
The pool only hides start-up latency: isolation is the same as a fresh sandbox's, because it
is a fresh sandbox.

A job never waits long for a preparation: where none is ready, or soon (a kind never prepared
yet, as on a fresh machine), it starts at once, at normal priority, a sandbox of its kind that
prepares itself without the warm-up (Kind.plain), about what a fresh process costs.

Sandboxes are keyed by their kind (what was prepared in them: libraries + warm-up). The
pool works over any backend (judge/sandbox/base.py `Backend`); with `per_key` 0 it keeps no
spares and every job starts a sandbox of its own. It keeps
`per_key` ready for keys in demand (most recent demand first), at most `max_idle` sandboxes
(those that import nothing ahead, a few MB each, aside) and `max_idle_bytes` of memory in
all, and spawns at most `spawners` at a time, at low CPU priority, so preparation does not
starve judging.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from judge.sandbox.ahead import Ahead
from judge.sandbox.base import Backend, Started, higher, hurry
from judge.sandbox.io_loop import RawRun, RunPlan
from judge.sandbox.job import Job, Kind
from judge.sandbox.pool_figures import PoolFigures, PoolStats
from judge.sandbox.priority import CpuPriority
from judge.sandbox.turns import Turn, Turns

log = logging.getLogger("tensorjudge.pool")


# A sandbox that imports nothing ahead holds an interpreter and NumPy: about 25 MB in a
# container, a few MB forked. Guessed at a framework's 400 MB, the spares of that one kind
# took over half of the default budget where the footprint cannot be read.
LIGHT_FOOTPRINT = 48 << 20
# Where the pool's upkeep waits for a judgement (upkeep_after_judgement): the pause after its
# end for its verdict to reach those waiting for it (their answers take milliseconds).
UPKEEP_GRACE_S = 0.2


@dataclass
class _Slot:
    kind: Kind
    memory_bytes: int
    ready: deque[Started] = field(default_factory=deque)
    spawning: int = 0
    # Sandboxes of this key still preparing, at low priority until a job waits for one.
    starting: list[Started] = field(default_factory=list)
    last_demand: float = 0.0
    demand: int = 0
    waiting: int = 0  # jobs blocked in acquire() for this key
    # The weight a spare still preparing takes while jobs wait for it: the highest of their
    # places in line (turns.py; None: its kind's).
    hurried_to: CpuPriority | None = None
    # Memory a prepared sandbox of this key was seen to hold (a guess until one is seen, or
    # for good where the backend cannot tell: a judge in a container of its own).
    footprint: int = 400 << 20
    # How long the latest prepared sandboxes of this key took to be ready (seconds).
    prepare_s: deque[float] = field(default_factory=lambda: deque(maxlen=4))

    def __post_init__(self) -> None:
        if self.kind.light:
            self.footprint = LIGHT_FOOTPRINT


def _cheap(slot: _Slot) -> bool:
    """A kind that imports nothing ahead (NumPy submissions): its spare costs a fork and a few
    MB, and the quickest submissions need it, so it neither counts toward `max_idle` nor is
    evicted for another kind (on a fresh machine the start-up work declares every other kind
    in the first seconds, and would evict it before the first NumPy submission comes)."""
    return slot.kind.light


class SandboxPool:
    def __init__(
        self,
        backend: Backend,
        *,
        per_key: int = 2,
        max_idle: int = 6,
        max_idle_bytes: int = 2 << 30,
        spawners: int = 2,
        prepare_timeout_s: float = 120.0,
        idle_keys_after_s: float = 600.0,
        split_idle: bool = True,
        spare_wait_s: float = 3.0,
        split_reserve: int = 0,
    ):
        self.backend = backend
        self.per_key = per_key
        self.max_idle = max_idle
        self.max_idle_bytes = max_idle_bytes
        self.prepare_timeout_s = prepare_timeout_s
        self.idle_keys_after_s = idle_keys_after_s
        self.stats = PoolStats()
        self.split_idle = split_idle
        # Spares of a kind a cut never takes: where a sandbox takes seconds to start (a
        # container), a wrong answer's probes, right after its parts, find one ready.
        self.split_reserve = split_reserve
        # Spares are replaced, and the sandboxes of finished runs destroyed, once no
        # judgement is in progress or when one ends (`judgement`), not beside one, where the
        # backend says so (Backend.upkeep_after_judgement).
        self.upkeep_after_judgement = backend.upkeep_after_judgement
        self._judging = 0  # judgements in progress (`judgement`)
        self._deferred = False  # a refill waits for one to end
        self._retired: list[Started] = []  # finished runs' sandboxes, to destroy after it
        self._owed = 0  # upkeep due once the verdicts of ended judgements are out
        self._destroyer = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tj-pool-retire")
        # A job waits for a spare being prepared only when spares of its kind were seen ready
        # within this (then a few times as long at most); else it starts its own at once.
        self.spare_wait_s = spare_wait_s
        self._active = 0  # jobs (or parts) running in sandboxes taken from this pool
        # Spares a split job took, or a job did not find: prepared once no job runs.
        self._refill_when_idle = False
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._lock = threading.Condition()
        self._spawners = ThreadPoolExecutor(max_workers=spawners,
                                            thread_name_prefix="tj-pool-spawn")
        self._closed = False
        self._ahead = Ahead(self._lock)  # sandboxes that imported a framework ahead
        self.turns = Turns()  # the jobs running, in the order they came
        # Per judging thread: whether its job fell back to a sandbox without the warm-up, and
        # whether it now runs again in one with the warm-up, whatever it costs.
        self._local = threading.local()

    @classmethod
    def around(cls, sandbox: SandboxPool | Backend) -> SandboxPool:
        """`sandbox` itself, or a pool of no spares around a bare backend (each job then
        starts a sandbox of its own)."""
        return sandbox if isinstance(sandbox, SandboxPool) else cls(sandbox, per_key=0)

    @property
    def name(self) -> str:
        """The backend's name (bwrap | docker)."""
        return self.backend.name

    def route(self, job: Job) -> Job:
        """The job as the backend starts it (its kind, or a variant the backend prefers)."""
        return job.of_kind(self.backend.route(job))

    @contextmanager
    def judgement(self) -> Iterator[None]:
        """Around one judgement, on the thread that judges it: a worker's covers the delivery
        of its verdict too; `run` opens one where none is open (see upkeep_after_judgement)."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0:
            with self._lock:
                self._judging += 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._lock:
                    self._judging -= 1
                    if self._deferred or self._retired:
                        self._deferred = False
                        self._owed += 1
                        threading.Timer(UPKEEP_GRACE_S, self._upkeep).start()

    def run(self, job: Job, tests_args: list[dict], plan: RunPlan) -> RawRun:
        """Run a job that `route` gave in a sandbox of its kind. A time-out in a sandbox
        without the warm-up (Kind.plain), where the job compiled what a warm-up does ahead,
        is met again in a sandbox of the kind that runs the warm-up (a prepared one if one
        is ready, else one started at once at normal priority): its run gives the verdict."""
        with self.judgement():
            return self._run(job, tests_args, plan)

    def _run(self, job: Job, tests_args: list[dict], plan: RunPlan) -> RawRun:
        self._local.fell_back = None
        # Its place in line, which every sandbox it takes (and a fork server it waits for)
        # follows until it ends.
        self._local.turn = self.turns.enter(job.kind.light)
        try:
            raw = self.execute(self.acquire(job.kind, plan.memory_bytes,
                                            compiles_itself=job.compiles_itself),
                               job, tests_args, plan)
            if not raw.timed_out or self._local.fell_back is None:
                return raw
            self._local.patient = True
            try:
                raw = self.execute(self.acquire(job.kind, plan.memory_bytes), job, tests_args,
                                   plan)
            finally:
                self._local.patient = False
            raw.rerun_after_timeout = True
            return raw
        finally:
            self.turns.leave(self._local.turn)
            self._local.turn = None

    def execute(self, sp: Started, job: Job, tests_args: list[dict],
                plan: RunPlan) -> RawRun:
        with self._lock:
            self._active += 1
        try:
            return self.backend.execute(sp, job, tests_args, plan, self.acquire, self._retire)
        finally:
            with self._lock:
                self._active -= 1
                if self._refill_when_idle and not self._active:
                    self._refill_when_idle = False
                    self._spawn_soon()
                self._lock.notify_all()

    def fill_compile_cache(self, kind: Kind, memory_bytes: int) -> bool:
        return self.backend.fill_compile_cache(kind, memory_bytes)

    def import_ahead(self, preload: tuple[str, ...], memory_bytes: int) -> None:
        """`preload` imported ahead of the first job of a kind importing it (Backend.
        import_ahead); where the backend has no place of its own for that, in a sandbox
        kept for that job (judge/sandbox/ahead.py). Returns once it is ready."""
        if self.backend.import_ahead(preload) or self.per_key <= 0:
            return
        kind = Kind(preload).plain()
        with self._lock:
            if not self._ahead.begin(kind):
                return
        sp: Started | None = None
        try:
            sp = self.backend.spawn(kind, memory_bytes, background=True)
            with self._lock:
                self._ahead.spawned(kind, sp)
            if not self.backend.wait_warm(sp, self.prepare_timeout_s):
                sp.destroy()
                sp = None
        except Exception:  # noqa: BLE001 - the first job starts its own
            log.exception("a sandbox importing ahead failed")
            sp = None
        with self._lock:
            unwanted = self._ahead.started(kind, sp)
        if unwanted is not None:
            unwanted.destroy()

    def acquire_idle(self, kind: Kind, count: int) -> list[Started] | None:
        """`count` prepared sandboxes for one submission's parts (judge/parallel.py), only
        when they are ready now and no other job of this pool is running: a spare core is
        then idle. Under load this says None and each job keeps to one sandbox."""
        if not self.split_idle or count < 2:
            return None
        key = kind.key
        with self._lock:
            slot = self._slots.get(key)
            if self._active or slot is None or self._closed:
                return None
            alive = [sp for sp in slot.ready if sp.alive()]
            if len(alive) < count + self.split_reserve:
                return None
            taken = alive[:count]
            for sp in taken:
                slot.ready.remove(sp)
            slot.last_demand = time.monotonic()
            slot.demand += 1
            self.stats.hits += 1
            self.stats.split += 1
            # The replacements are prepared once the parts are done: started now, they would
            # take the idle cores from the very job that was cut to use them. A job that comes
            # meanwhile and finds no spare starts one at once (acquire).
            self._refill_when_idle = True
        return taken

    def prewarm(self, kind: Kind, memory_bytes: int) -> None:
        """Declare a kind worth keeping ready from the start."""
        with self._lock:
            slot = self._slot(kind, memory_bytes)
            slot.last_demand = time.monotonic()
        self._refill()

    def acquire(self, kind: Kind, memory_bytes: int, *, compiles_itself: bool = False
                ) -> Started:
        turn: Turn | None = getattr(self._local, "turn", None)
        sp = self._acquire(kind, memory_bytes, compiles_itself, turn)
        if turn is not None:
            turn.follow(sp.weigh)  # no need to stop: the turn leaves the line with its job
        return sp

    def _acquire(self, kind: Kind, memory_bytes: int, compiles_itself: bool,
                 turn: Turn | None) -> Started:
        """A prepared sandbox of this kind, or one being prepared (hurried) where that is
        quick; else a fresh one at normal priority, of the kind without its warm-up (of the
        kind itself in a pool of no spares). `compiles_itself`: the job compiles its own
        code (jax.jit), so the warm-up's executables would not serve it."""
        if self.per_key <= 0:
            self.stats.cold += 1
            return self.backend.spawn(kind, memory_bytes, turn=turn)
        key = kind.key
        mine = None if turn is None else turn.priority  # the weight its place in line owes it
        with self._lock:
            slot = self._slot(kind, memory_bytes)
            slot.last_demand = time.monotonic()
            slot.demand += 1
            patient = getattr(self._local, "patient", False)
            deadline = time.monotonic() + (0.0 if patient else self._wait_for_spare_s(slot))
            waited = False
            while True:
                while slot.ready:
                    sp = slot.ready.popleft()
                    if sp.alive():
                        self._count(waited)
                        self._lock.notify_all()
                        self._spawn_soon()
                        return sp
                    self.stats.discarded += 1
                    threading.Thread(target=sp.destroy, daemon=True).start()
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    break
                if slot.spawning == 0:
                    self._start_spawn(key, slot)
                hurried_to = mine if not slot.waiting else higher(slot.hurried_to, mine)
                if not waited or hurried_to != slot.hurried_to:
                    for preparing in slot.starting:
                        hurry(preparing, hurried_to)
                slot.hurried_to = hurried_to
                waited = True
                slot.waiting += 1
                try:
                    self._lock.wait(timeout=min(left, 0.5))
                finally:
                    slot.waiting -= 1
            # The spares it did not find are prepared once no job runs: started now, they
            # would take the CPU from this job (a warm-up may have to compile).
            self._refill_when_idle = True
        self.stats.cold += 1
        if not patient:
            # Its libraries imported ahead: it only compiles (or loads from the compilation
            # cache) the operations it runs, where any other start imports them first.
            with self._lock:
                ahead = self._ahead.take(kind, mine)
            if ahead is not None:
                self._local.fell_back = kind
                return ahead
        # The warm-up run in the sandbox itself, before the job: for a patient job, or where
        # the compilation cache holds the warm-up (it then loads in moments, and the job
        # finds every operation the warm-up ran ready, as in a spare). Not for a job that
        # compiles its own code: loading the warm-up (a second or two on a busy machine)
        # would only delay its start.
        if patient or (kind.warmup is not None and not compiles_itself
                       and self.backend.compile_cache_holds(kind)):
            return self.backend.spawn(kind.preparing_itself(), memory_bytes, turn=turn)
        self._local.fell_back = kind
        return self.backend.spawn(kind.plain(), memory_bytes, turn=turn)

    def _wait_for_spare_s(self, slot: _Slot) -> float:
        """Called with the lock held: how long a job of `slot`'s kind may wait for a spare
        being prepared. Nothing when none was seen ready yet (on a fresh machine: its warm-up
        may still compile) or they take long (a whole warm-up run in the sandbox: seconds);
        else twice the quickest of the latest, within [2 s, `spare_wait_s`]."""
        if not slot.prepare_s:
            return 0.0
        seen = min(slot.prepare_s)
        if seen > self.spare_wait_s:
            return 0.0
        return min(max(2 * seen, 2.0), self.spare_wait_s)

    def _count(self, waited: bool) -> None:
        if waited:
            self.stats.waits += 1
        else:
            self.stats.hits += 1

    def _slot(self, kind: Kind, memory_bytes: int) -> _Slot:
        key = kind.key
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(kind, memory_bytes)
        slot.memory_bytes = max(slot.memory_bytes, memory_bytes)
        self._slots.move_to_end(key)
        return slot

    def _idle_total(self) -> int:
        return sum(len(s.ready) + s.spawning for s in self._slots.values() if not _cheap(s))

    def _idle_bytes(self) -> int:
        return sum((len(s.ready) + s.spawning) * s.footprint for s in self._slots.values())

    def _room_for(self, slot: _Slot) -> bool:
        return (self._idle_total() < self.max_idle
                and self._idle_bytes() + slot.footprint <= self.max_idle_bytes)

    def _wanted(self) -> list[str]:
        """Keys in demand, most recent first."""
        now = time.monotonic()
        return [k for k, s in reversed(self._slots.items())
                if now - s.last_demand < self.idle_keys_after_s]

    def _refill(self) -> None:
        with self._lock:
            self._spawn_soon()

    def _retire(self, sp: Started) -> None:
        """A finished run's sandbox: destroyed now, off the verdict's path, or once the
        judgement is over (upkeep_after_judgement)."""
        with self._lock:
            if self.upkeep_after_judgement and self._judging and not self._closed:
                self._retired.append(sp)
                return
        self._destroy_soon([sp])

    def _destroy_soon(self, sandboxes: list[Started]) -> None:
        for sp in sandboxes:
            try:
                self._destroyer.submit(sp.destroy)
            except RuntimeError:  # closed meanwhile
                sp.destroy()

    def _upkeep(self) -> None:
        """What ended judgements left to do, now that their verdicts are out."""
        with self._lock:
            self._owed -= 1
            retired, self._retired = self._retired, []
            self._spawn_soon(now=True)
        self._destroy_soon(retired)

    def _spawn_soon(self, *, now: bool = False) -> None:
        """Called with the lock held: start spawns for keys below their target (`now`: even
        beside a judgement). While jobs wait for a sandbox, only their keys get one: a spare
        of another kind would take CPU from them now and, in a backlog, be evicted unused
        later."""
        if self._closed:
            return
        if self.upkeep_after_judgement and self._judging and not now:
            self._deferred = True
            return
        keys = self._wanted()
        backlog = [k for k in keys if self._slots[k].waiting]
        for key in backlog or keys:
            slot = self._slots[key]
            while len(slot.ready) + slot.spawning < self.per_key:
                if self._room_for(slot):
                    self._start_spawn(key, slot)
                elif not self._evict_for(key):
                    break

    def _evict_for(self, key: str) -> bool:
        """Make room for `key`: destroy a spare of the key whose last demand is oldest,
        if it is older than `key`'s."""
        mine = self._slots[key].last_demand
        victims = [(s.last_demand, k) for k, s in self._slots.items()
                   if k != key and s.ready and s.last_demand < mine and not _cheap(s)]
        if not victims:
            return False
        sp = self._slots[min(victims)[1]].ready.pop()
        self.stats.discarded += 1
        threading.Thread(target=sp.destroy, daemon=True).start()
        return True

    def _start_spawn(self, key: str, slot: _Slot) -> None:
        slot.spawning += 1
        self._spawners.submit(self._spawn_one, key, slot)

    def _spawn_one(self, key: str, slot: _Slot) -> None:
        sp: Started | None = None
        try:
            sp = self.backend.spawn(slot.kind, slot.memory_bytes, background=True)
            with self._lock:
                slot.starting.append(sp)
                if slot.waiting:
                    hurry(sp, slot.hurried_to)
            ok = self.backend.wait_warm(sp, self.prepare_timeout_s)
        except Exception:  # noqa: BLE001 - a failed spawn must not kill the spawner
            log.exception("spawning a sandbox failed")
            ok = False
        used = sp.memory_bytes() if ok and sp is not None else None
        warm_ms = getattr(sp, "warm_ms", None) if ok else None
        with self._lock:
            slot.spawning -= 1
            slot.starting = [s for s in slot.starting if s is not sp]
            if used:
                slot.footprint = used
            if warm_ms is not None:
                slot.prepare_s.append(warm_ms / 1000.0)
            if ok and sp is not None and not self._closed:
                slot.ready.append(sp)
                self.stats.spawned += 1
                sp = None
            self._lock.notify_all()
        if sp is not None:
            self.stats.discarded += 1
            sp.destroy()
            time.sleep(0.5)  # a host that cannot spawn should not be hammered

    def spawning(self) -> int:
        """Spares being prepared, and upkeep due (upkeep_after_judgement) counted as one."""
        with self._lock:
            due = self._owed + self._deferred
            return sum(s.spawning for s in self._slots.values()) + due

    def idle(self) -> list[Started]:
        with self._lock:
            return [sp for s in self._slots.values() for sp in s.ready] + self._ahead.idle()

    def idle_memory_bytes(self) -> int:
        """Memory charged to the idle sandboxes (0 for those whose backend cannot say), plus
        what they share (the fork servers' own memory), counted once."""
        total = self.backend.shared_memory_bytes()
        for sp in self.idle():
            total += sp.memory_bytes() or 0
        return total

    def figures(self) -> PoolFigures:
        st = self.stats
        return PoolFigures(idle=len(self.idle()), spawning=self.spawning(),
                           idle_memory_mb=round(self.idle_memory_bytes() / 2**20),
                           hits=st.hits, waits=st.waits, cold=st.cold, spawned=st.spawned,
                           discarded=st.discarded, split=st.split)

    def wait_ready(self, count: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while sum(len(s.ready) for s in self._slots.values()) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(timeout=left)
        return True

    def close(self, drain_s: float = 600.0) -> None:
        """Destroy the spares and stop preparing. Jobs already judging finish first (up to
        `drain_s`): a sandbox dies with the thread that started it (bubblewrap's
        --die-with-parent), and the spawner threads end here."""
        with self._lock:
            self._closed = True
            victims = [sp for s in self._slots.values() for sp in s.ready]
            victims += self._ahead.close()
            victims += self._retired
            self._retired = []
            for s in self._slots.values():
                s.ready.clear()
            self._lock.notify_all()
        for sp in victims:
            sp.destroy()
        deadline = time.monotonic() + drain_s
        with self._lock:
            while self._active and time.monotonic() < deadline:
                self._lock.wait(timeout=0.5)
        self._spawners.shutdown(wait=True, cancel_futures=True)
        self._destroyer.shutdown(wait=True)
        # Spawns that were in flight when we closed are destroyed by _spawn_one.
        self.backend.close()
