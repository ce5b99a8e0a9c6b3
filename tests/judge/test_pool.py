"""The pool of prepared sandboxes: ready ahead, single use, same verdicts as a fresh one."""

from __future__ import annotations

import os
import time

import pytest

from judge.engine import judge
from judge.kinds import kind_for, preload_for
from judge.sandbox import BwrapSandbox, SandboxPool
from judge.sandbox.io_loop import RawRun, RunPlan
from judge.sandbox.job import Job, Kind, Warmup
from judge.sandbox.priority import CpuPriority
from judge.sandbox.turns import Turn, Turns
from judge.verdicts import Verdict

pytestmark = pytest.mark.sandbox

CORRECT = "def double(x):\n    return (2 * x).reshape(-1)\n"
# Wrong only if a file planted by an earlier submission is there when this one starts.
PLANT = ("import os\nINHERITED = os.path.exists('/tmp/planted')\n"
         "open('/tmp/planted', 'w').write('x')\n"
         "def double(x):\n    return (2 * x).reshape(-1) + (1 if INHERITED else 0)\n")


@pytest.fixture
def pool(sandbox: BwrapSandbox):
    p = SandboxPool(sandbox, per_key=2, max_idle=4)
    yield p
    p.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_prepared_sandboxes_serve_jobs_once(pool, double):
    header = kind_for(double, preload_for(["numpy"]))
    pool.prewarm(header, 512 << 20)
    assert pool.wait_ready(2, 60)
    idle = pool.idle()
    assert len(idle) == 2 and all(sp.warm_ms is not None for sp in idle)
    res = judge(double, CORRECT, pool)
    assert res.verdict is Verdict.AC
    assert pool.stats.hits == 1
    # The sandbox that ran the job is gone; a spare replaces it.
    used = [sp for sp in idle if sp not in pool.idle()]
    assert len(used) == 1
    deadline = time.monotonic() + 10
    while _alive(used[0].proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(used[0].proc.pid)
    assert pool.wait_ready(2, 60)


def test_nothing_carries_over_between_pooled_jobs(pool, double):
    for _ in range(3):
        res = judge(double, PLANT, pool)
        assert res.verdict is Verdict.AC, res.to_dict()


def test_pooled_and_fresh_sandboxes_agree(pool, sandbox, double, double_quick):
    # The time-out with a short limit: it is met four times here.
    for package, code in ((double, CORRECT), (double, "def double(x):\n    return x\n"),
                          (double, "def double(x):\n    1/0\n"),
                          (double_quick, "def double(x):\n    while True:\n        pass\n")):
        assert judge(package, code, pool).verdict is judge(package, code, sandbox).verdict


def test_close_destroys_spares(sandbox, double):
    p = SandboxPool(sandbox, per_key=2)
    p.prewarm(kind_for(double, []), 512 << 20)
    assert p.wait_ready(2, 60)
    pids = [sp.proc.pid for sp in p.idle()]
    p.close()
    time.sleep(0.5)
    assert not any(_alive(pid) for pid in pids)


def test_spares_of_stale_kinds_make_room(sandbox, double):
    """A spare of the kind demanded longest ago makes room for a newer kind's; a spare that
    imports nothing ahead (NumPy's) neither takes room nor is evicted."""
    p = SandboxPool(sandbox, per_key=1, max_idle=1)
    try:
        numpy = kind_for(double, [])
        p.prewarm(numpy, 512 << 20)
        old = kind_for(double, ["torch"])
        p.prewarm(old, 512 << 20)
        assert p.wait_ready(2, 90)
        new = kind_for(double, ["jax"])
        p.prewarm(new, 512 << 20)

        def ready_keys() -> set[str]:
            return {k for k, s in p._slots.items() if s.ready}

        want = {numpy.key, new.key}
        deadline = time.monotonic() + 90
        while ready_keys() != want and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready_keys() == want, "the newest kind did not get the room, or NumPy's went"
        assert p.stats.discarded >= 1
    finally:
        p.close()


class _StubSpawned:
    def __init__(self, key: str, background: bool):
        import threading

        self.key = key
        self.niced = background
        self.hurried = threading.Event()
        self.warm_ms: float | None = None
        self.weights: list[CpuPriority] = []
        self.destroyed = False

    def foreground(self) -> None:
        self.niced = False
        self.hurried.set()

    def weigh(self, priority: CpuPriority) -> None:
        self.weights.append(priority)

    def alive(self) -> bool:
        return True

    def memory_bytes(self) -> int | None:
        return None

    def destroy(self) -> None:
        self.destroyed = True


class _StubSandbox:
    """Stands in for bubblewrap to test only the pool's scheduling: which kind it prepares
    when. Preparing kind `slow` blocks until released."""

    def __init__(self) -> None:
        import threading

        self.spawned: list[str] = []
        self.release = threading.Event()
        self.closed = False
        self.name = "stub"
        self.upkeep_after_judgement = False
        self.cached: set[str] = set()  # warm-ups the compilation cache holds
        self.kinds: dict[int, Kind] = {}
        # Whether it has a place of its own to import libraries ahead (a fork server).
        self.imports_ahead = True
        self.imported: list[tuple[str, ...]] = []
        self.turns: list[Turn | None] = []  # the job's turn each spawn was given
        self.made: list[_StubSpawned] = []

    def import_ahead(self, preload: tuple[str, ...]) -> bool:
        self.imported.append(preload)
        return self.imports_ahead

    def shared_memory_bytes(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True

    def route(self, job: Job) -> Kind:
        return job.kind

    def compile_cache_holds(self, kind: Kind) -> bool:
        return kind.warmup is not None and kind.warmup.key in self.cached

    def spawn(self, kind: Kind, memory_bytes: int, background: bool = False,
              turn: Turn | None = None) -> _StubSpawned:
        key = kind.warmup.key if kind.warmup is not None else "?"
        self.spawned.append(key)
        self.turns.append(turn)
        sp = _StubSpawned(key, background)
        self.made.append(sp)
        self.kinds[id(sp)] = kind
        if background:
            self.last = sp
        return sp

    def wait_warm(self, sp: _StubSpawned, timeout_s: float) -> bool:
        ok = self.release.wait(timeout_s) if sp.key == "slow" else True
        sp.warm_ms = 1.0  # as the real wait_warm sets it: quick, once released
        return ok

    def execute(self, sp: _StubSpawned, job: Job, tests_args: list, plan: object,
                acquire: object, retire: object) -> RawRun:
        self.release.wait(30)  # a job runs until released
        return RawRun()


def _known_quick(p: SandboxPool, stub: _StubSandbox, key: str) -> None:
    """One spare of kind `key` prepared (quickly) and taken, the next one left preparing:
    the pool has seen this kind ready in no time, so its jobs wait for its spares."""
    p.prewarm(_kind(key), 1 << 20)
    stub.release.set()
    assert p.wait_ready(1, 10)
    stub.release.clear()
    first = p.acquire(_kind(key), 1 << 20)  # its replacement now waits to be released
    deadline = time.monotonic() + 10
    while stub.last is first and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stub.last is not first


@pytest.mark.timeout(60)
def test_a_spare_a_job_waits_for_prepares_at_normal_priority():
    """Spares prepare niced, so judging keeps the CPU; but once a job waits for one, it is
    that job's sandbox, and background work (other spares, a warm-up filling the cache) must
    not starve it."""
    import threading

    stub = _StubSandbox()
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    try:
        _known_quick(p, stub, "slow")
        spare = stub.last
        time.sleep(0.2)
        assert spare.niced and not spare.hurried.is_set()  # nobody waits: it stays niced
        got: list[object] = []
        waiter = threading.Thread(target=lambda: got.append(p.acquire(_kind("slow"), 1 << 20)))
        waiter.start()
        assert spare.hurried.wait(5), "the awaited spare kept its low priority"
        assert not spare.niced
        stub.release.set()
        waiter.join(10)
        assert got == [spare]
    finally:
        stub.release.set()
        p.close()


@pytest.mark.timeout(60)
def test_a_waited_for_spare_prepares_at_the_weight_of_the_first_waiting_jobs_place():
    """A spare a job waits for takes the weight of that job's place in line (turns.py), not
    its kind's: a job behind one per core hurries it to YIELD, and a job ahead of it in line
    that comes to wait too raises it to its own."""
    import threading

    stub = _StubSandbox()
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    p.turns = Turns(cores=1)
    running = p.turns.enter(light=False)  # a job on the only core
    try:
        _known_quick(p, stub, "slow")
        spare = stub.last
        got: list[object] = []

        def wait_in_line(turn: Turn) -> None:
            p._local.turn = turn  # noqa: SLF001 - as run() sets it
            got.append(p.acquire(_kind("slow"), 1 << 20))

        behind = p.turns.enter(light=False)
        waiter = threading.Thread(target=wait_in_line, args=(behind,))
        waiter.start()
        assert spare.hurried.wait(5), "the awaited spare kept a spare's weight"
        assert spare.weights == [CpuPriority.YIELD]
        first = Turn(p.turns, light=False)  # a job at a full weight comes to wait too
        other = threading.Thread(target=wait_in_line, args=(first,))
        other.start()
        deadline = time.monotonic() + 5
        while spare.weights[-1] is not CpuPriority.NORMAL and time.monotonic() < deadline:
            time.sleep(0.01)
        assert spare.weights[-1] is CpuPriority.NORMAL
        stub.release.set()
        waiter.join(10)
        other.join(10)
    finally:
        p.turns.leave(running)
        stub.release.set()
        p.close()


def _kind(key: str) -> Kind:
    return Kind((), Warmup(key, ""))


def _a_spare_preparing(stub: _StubSandbox) -> tuple[SandboxPool, _StubSpawned]:
    """A pool over `stub` whose one spare of kind `slow` is being prepared (niced), never
    ready until the stub releases it."""
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    p.prewarm(_kind("slow"), 1 << 20)
    deadline = time.monotonic() + 10
    while not hasattr(stub, "last") and time.monotonic() < deadline:
        time.sleep(0.01)
    return p, stub.last


@pytest.mark.timeout(60)
def test_a_job_whose_kind_is_not_ready_starts_its_own_at_once():
    """On a fresh machine no spare of a kind is ready and its first preparation may take
    long (a warm-up that compiles): the job does not wait for it nor hurry it, but starts at
    normal priority a sandbox of its kind that prepares itself without the warm-up. The
    spare is prepared, still niced, once no job runs."""
    stub = _StubSandbox()
    p, spare = _a_spare_preparing(stub)
    try:
        t0 = time.monotonic()
        own = p.acquire(_kind("slow"), 1 << 20)
        assert time.monotonic() - t0 < 2
        assert own is not spare and own.key == "?" and not own.niced  # no warm-up, not niced
        assert spare.niced and not spare.hurried.is_set()
        assert p.stats.cold == 1 and p.stats.waits == 0
        stub.release.set()
        assert p.wait_ready(1, 10)
        # Seen ready quickly now: the next job takes the spare.
        assert p.acquire(_kind("slow"), 1 << 20) is spare
    finally:
        stub.release.set()
        p.close()


@pytest.mark.timeout(60)
def test_a_kind_whose_warm_up_is_cached_prepares_itself_for_the_job():
    """After `./dev setup` (`problems prepare`) the compilation cache holds every kind's
    warm-up: a job finding no spare starts at once, at normal priority, a sandbox of its kind
    that runs the warm-up itself (it loads, rather than compiles), not one without it."""
    stub = _StubSandbox()
    stub.cached.add("slow")
    p, spare = _a_spare_preparing(stub)
    try:
        own = p.acquire(_kind("slow"), 1 << 20)
        assert own is not spare and own.key == "slow" and not own.niced
        assert stub.kinds[id(own)].self_prepared
        assert spare.niced and not spare.hurried.is_set()
        # A job that compiles its own code (jax.jit) gains nothing from the warm-up's
        # executables: the kind without its warm-up, which starts sooner.
        assert p.acquire(_kind("slow"), 1 << 20, compiles_itself=True).key == "?"
        stub.cached.clear()  # and without the cache: the kind without its warm-up
        assert p.acquire(_kind("slow"), 1 << 20).key == "?"
    finally:
        stub.release.set()
        p.close()


@pytest.mark.timeout(60)
def test_where_the_backend_cannot_import_ahead_one_sandbox_that_did_waits_for_the_first_job():
    """A backend with no place to import a framework ahead (a container imports for
    itself): the pool starts one sandbox that imported it, at normal priority, and the first
    job of any kind importing those libraries that finds no spare of its own takes it rather
    than start one (eager JAX's marker aside: the same libraries). It is not replaced."""
    stub = _StubSandbox()
    stub.imports_ahead = False
    stub.release.set()
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    try:
        p.import_ahead(("jax",), 1 << 20)
        assert stub.imported == [("jax",)] and stub.spawned == ["?"]
        [ahead] = p.idle()
        assert stub.kinds[id(ahead)] == Kind(("jax",)).plain()
        eager = Kind(("jax", "jax.numpy"), Warmup("eager", ""))
        assert p.acquire(Kind(("torch",)), 1 << 20) is not ahead  # other libraries
        assert p.acquire(eager, 1 << 20) is ahead
        assert p.stats.cold == 2
        again = p.acquire(eager, 1 << 20)
        assert again is not ahead and stub.kinds[id(again)] == eager.plain()
        # A rerun after a time-out (patient) wants the warm-up: never the plain one.
        p.import_ahead(("jax",), 1 << 20)
        [second] = p.idle()
        p._local.patient = True
        assert p.acquire(eager, 1 << 20).key == "eager"
        p._local.patient = False
        assert p.acquire(eager, 1 << 20) is second
    finally:
        p.close()
    # Where the backend imports ahead itself (bubblewrap's fork servers): no sandbox.
    stub = _StubSandbox()
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    try:
        p.import_ahead(("jax",), 1 << 20)
        assert stub.imported == [("jax",)] and stub.spawned == [] and p.idle() == []
    finally:
        p.close()


@pytest.mark.timeout(60)
def test_a_backlog_gets_the_preparation_not_other_kinds():
    import threading

    stub = _StubSandbox()
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    try:
        _known_quick(p, stub, "slow")
        p.prewarm(_kind("fast"), 1 << 20)
        assert p.wait_ready(1, 10)
        got: list[object] = []
        waiter = threading.Thread(target=lambda: got.append(p.acquire(_kind("slow"), 1 << 20)))
        waiter.start()
        deadline = time.monotonic() + 10
        while not p._slots[list(p._slots)[-1]].waiting and time.monotonic() < deadline:
            time.sleep(0.01)
        # A job of the other kind takes its spare while the slow kind's job still waits:
        # no new spare of the other kind is started until the waiting job is served.
        p.acquire(_kind("fast"), 1 << 20)
        time.sleep(0.3)
        assert stub.spawned.count("fast") == 1, stub.spawned
        stub.release.set()
        waiter.join(10)
        assert got and got[0].key == "slow"
        p.acquire(_kind("slow"), 1 << 20)  # any later demand refills what is missing
        deadline = time.monotonic() + 10
        while stub.spawned.count("fast") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stub.spawned.count("fast") == 2, stub.spawned
    finally:
        stub.release.set()
        p.close()


@pytest.mark.timeout(60)
def test_a_split_jobs_spares_are_replaced_once_its_parts_are_done():
    """Replacements started at once would take the idle cores from the very job that was cut
    in two to use them; a job that comes meanwhile still gets a sandbox started at once."""
    import threading

    stub = _StubSandbox()
    p = SandboxPool(stub, per_key=2, max_idle=4, spawners=2)  # type: ignore[arg-type]
    plan = RunPlan(time_ms=1000, memory_bytes=1 << 20, output_cap=1024, ole_limit=4096,
                   expected_sizes=[])
    try:
        p.prewarm(_kind("fast"), 1 << 20)
        assert p.wait_ready(2, 10)
        taken = p.acquire_idle(_kind("fast"), 2)
        assert taken is not None and len(taken) == 2
        job = Job(_kind("fast"), "", "f")
        parts = [threading.Thread(target=p.execute, args=(sp, job, [], plan))
                 for sp in taken]
        for t in parts:
            t.start()
        time.sleep(0.3)
        assert stub.spawned.count("fast") == 2, stub.spawned  # nothing started meanwhile
        got: list[object] = []
        waiter = threading.Thread(target=lambda: got.append(p.acquire(_kind("fast"), 1 << 20)))
        waiter.start()
        waiter.join(10)
        assert got and stub.spawned.count("fast") >= 3, stub.spawned
        stub.release.set()
        for t in parts:
            t.join(10)
        assert p.wait_ready(2, 10), stub.spawned  # refilled once they were done
    finally:
        stub.release.set()
        p.close()


def test_closing_lets_a_job_in_a_prepared_sandbox_finish(sandbox, double):
    """A spare was started by a spawner thread, and bubblewrap's --die-with-parent ties the
    sandbox to that thread: closing must not end it under a running job."""
    import threading

    p = SandboxPool(sandbox, per_key=1)
    p.prewarm(kind_for(double, preload_for(["numpy"])), 512 << 20)
    assert p.wait_ready(1, 60)
    slow = "import time\ndef double(x):\n    time.sleep(0.4)\n    return (2 * x).reshape(-1)\n"
    out: list = []
    t = threading.Thread(target=lambda: out.append(judge(double, slow, p)))
    t.start()
    deadline = time.monotonic() + 30
    while not p._active and time.monotonic() < deadline:  # noqa: SLF001 - until it judges
        time.sleep(0.01)
    p.close()
    t.join(60)
    assert out and out[0].verdict is Verdict.AC, out[0].to_dict() if out else None
    assert p.stats.hits == 1


@pytest.mark.timeout(60)
def test_a_time_out_without_the_warm_up_is_met_again_with_the_warm_up():
    """In a sandbox without the warm-up the job compiles what the warm-up does ahead; a
    time-out there is not a verdict: the job runs again in a sandbox of its kind that runs
    the warm-up (started at once: a spare being prepared in the background may take long),
    and that run's outcome stands."""
    class TimesOutWithoutWarmUp(_StubSandbox):
        def __init__(self) -> None:
            super().__init__()
            self.ran: list[Kind] = []

        def execute(self, sp: _StubSpawned, job: Job, tests_args: list, plan: object,
                    acquire: object, retire: object) -> RawRun:
            self.ran.append(self.kinds[id(sp)])
            return RawRun(timed_out=sp.key == "?")

    stub = TimesOutWithoutWarmUp()
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    plan = RunPlan(time_ms=1000, memory_bytes=1 << 20, output_cap=1024, ole_limit=4096,
                   expected_sizes=[])
    try:
        p.prewarm(_kind("slow"), 1 << 20)  # never ready until released
        raw = p.run(Job(_kind("slow"), "", "f"), [], plan)
        assert [(k.warmup.key if k.warmup else None, k.self_prepared) for k in stub.ran] == [
            (None, True), ("slow", True)]
        assert not raw.timed_out and raw.rerun_after_timeout
    finally:
        stub.release.set()
        p.close()


@pytest.mark.timeout(60)
def test_a_cut_leaves_the_reserved_spare():
    """Where a sandbox takes seconds to start (a container), a Submit is cut in two only
    when a third spare stays ready for what follows it (a wrong answer's probes)."""
    stub = _StubSandbox()
    p = SandboxPool(stub, per_key=3, max_idle=4, spawners=2,  # type: ignore[arg-type]
                    split_reserve=1)
    try:
        stub.release.set()
        p.prewarm(_kind("slow"), 1 << 20)
        assert p.wait_ready(3, 10)
        stub.release.clear()  # the replacement below stays unready
        first = p.acquire(_kind("slow"), 1 << 20)  # two left: not enough to cut
        assert p.acquire_idle(_kind("slow"), 2) is None
        stub.release.set()
        p.execute(first, Job(_kind("slow"), "", "f"), [],
                  RunPlan(time_ms=1000, memory_bytes=1 << 20, output_cap=1024,
                          ole_limit=4096, expected_sizes=[]))
        assert p.wait_ready(3, 10)
        taken = p.acquire_idle(_kind("slow"), 2)
        assert taken is not None and len(taken) == 2
        assert len(p._slots[_kind("slow").key].ready) == 1  # noqa: SLF001 - the reserve
    finally:
        stub.release.set()
        p.close()


@pytest.mark.timeout(60)
def test_jobs_behind_one_per_core_yield_until_those_before_them_end():
    """As a naive judge with a worker per core runs them in order: a job that finds every
    core taken by jobs that came before it runs at YIELD (its sandbox, and the spawn that
    makes it knows its turn), a light one at its own weight; each moves up as those before
    it end."""
    import threading

    stub = _StubSandbox()
    p = SandboxPool(stub, per_key=0)  # type: ignore[arg-type]
    p.turns = Turns(cores=1)
    plan = RunPlan(time_ms=1000, memory_bytes=1 << 20, output_cap=1024, ole_limit=4096,
                   expected_sizes=[])
    heavy = Kind(("torch",), Warmup("heavy", ""))
    threads = []
    for kind in (heavy, heavy, _kind("light")):
        t = threading.Thread(target=p.run, args=(Job(kind, "", "f"), [], plan))
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 10
        while len(stub.turns) < len(threads) and time.monotonic() < deadline:
            time.sleep(0.01)
    try:
        first, second, light = stub.turns
        assert first is not None and second is not None and light is not None
        assert (first.priority, second.priority, light.priority) == (
            CpuPriority.NORMAL, CpuPriority.YIELD, CpuPriority.LIGHT)
        p.turns.leave(first)  # as when the first job ends
        assert second.priority is CpuPriority.NORMAL
        # Each sandbox follows its job's turn.
        assert [sp.weights for sp in stub.made] == [
            [CpuPriority.NORMAL], [CpuPriority.YIELD, CpuPriority.NORMAL], [CpuPriority.LIGHT]]
    finally:
        stub.release.set()
        for t in threads:
            t.join(10)
        p.close()
    assert p.turns.enter(light=False).priority is CpuPriority.NORMAL  # every job left


def test_where_no_footprint_can_be_read_spares_that_import_nothing_count_small():
    """A backend that cannot say what a spare holds (a judge in a container of its own): a
    kind importing nothing is counted at a few tens of MB, not at a framework's guess. At
    400 MB each, three NumPy spares left a 1.4 GB budget no room for a Flax spare."""
    stub = _StubSandbox()
    stub.release.set()
    p = SandboxPool(stub, per_key=3, max_idle=6, max_idle_bytes=1400 << 20,  # type: ignore[arg-type]
                    spawners=2)
    try:
        p.prewarm(Kind(), 1 << 20)
        assert p.wait_ready(3, 10)
        p.prewarm(_kind("flax"), 1 << 20)
        assert p.wait_ready(6, 10)
        assert len(p._slots[_kind("flax").key].ready) == 3  # noqa: SLF001
    finally:
        p.close()


class _FinishingStub(_StubSandbox):
    """Every run finishes (its runner's final frame came): the backend retires its sandbox."""

    def execute(self, sp: _StubSpawned, job: Job, tests_args: list, plan: object,
                acquire: object, retire) -> RawRun:
        retire(sp)
        return RawRun(finished=True)


@pytest.mark.timeout(60)
def test_where_starting_a_sandbox_is_the_hosts_work_the_upkeep_waits_for_the_judgement():
    """Over a backend whose sandboxes are started and torn down by the host's own processes
    (a container engine), a spare a job takes is replaced, and the sandbox of its finished
    run destroyed, once the judgement (the writing of its verdict included) is over: not
    beside its job, nor while its verdict is delivered. Without that (bubblewrap), at once."""
    for after in (True, False):
        stub = _FinishingStub()
        stub.upkeep_after_judgement = after
        stub.release.set()
        p = SandboxPool(stub, per_key=1, max_idle=4)  # type: ignore[arg-type]
        try:
            p.prewarm(_kind("k"), 1 << 20)
            assert p.wait_ready(1, 10)
            job = Job(_kind("k"), "", "f")
            plan = RunPlan(time_ms=1000, memory_bytes=1 << 20, output_cap=1, ole_limit=1,
                           expected_sizes=[])
            with p.judgement():
                p.run(job, [], plan)
                time.sleep(0.5)  # the verdict being written
                made, used = len(stub.made), stub.made[0]
                destroyed = used.destroyed
                assert p.spawning() == (1 if after else 0)  # what a client settling sees
            if after:
                assert (made, destroyed) == (1, False), "upkeep beside the judgement"
                deadline = time.monotonic() + 10
                while (len(stub.made) < 2 or not used.destroyed) and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert len(stub.made) == 2 and used.destroyed, "no upkeep after the judgement"
            else:
                assert (made, destroyed) == (2, True)
            # A run outside any judgement of the caller's is a judgement of its own.
            p.run(job, [], plan)
            deadline = time.monotonic() + 10
            while len(stub.made) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(stub.made) == 3 and stub.made[1].destroyed
        finally:
            p.close()


class _SlowToImport(_StubSandbox):
    """No place of its own to import ahead (a container backend); its sandboxes are ready
    once released."""

    def __init__(self) -> None:
        super().__init__()
        self.imports_ahead = False

    def wait_warm(self, sp: _StubSpawned, timeout_s: float) -> bool:
        ok = self.release.wait(timeout_s)
        sp.warm_ms = 1.0
        return ok


@pytest.mark.timeout(60)
def test_a_sandbox_importing_ahead_prepares_niced_until_a_job_waits_for_it():
    """The sandboxes a starting judge has import each framework ahead (a backend without a
    fork server) prepare at a spare's weight: on a fresh start, three of them importing at a
    job's weight took the cores from the first jobs. The one a job waits for prepares at that
    job's weight."""
    import threading

    stub = _SlowToImport()
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    try:
        for preload in (("jax",), ("torch",)):
            threading.Thread(target=p.import_ahead, args=(preload, 1 << 20), daemon=True).start()
        deadline = time.monotonic() + 10
        while len(stub.made) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        jax, torch = sorted(stub.made, key=lambda sp: stub.kinds[id(sp)].preload)
        assert jax.niced and torch.niced
        got: list[object] = []
        waiter = threading.Thread(target=lambda: got.append(p.acquire(Kind(("jax",)), 1 << 20)))
        waiter.start()
        assert jax.hurried.wait(5), "the awaited sandbox kept a spare's weight"
        assert torch.niced and not torch.hurried.is_set()
        stub.release.set()
        waiter.join(10)
        assert got == [jax]
    finally:
        stub.release.set()
        p.close()


@pytest.mark.timeout(60)
def test_a_job_behind_the_cores_hurries_the_sandbox_importing_ahead_only_to_its_place():
    """On a fresh start the first PyTorch job came behind two JAX jobs on two cores: it
    waited for the sandbox importing PyTorch ahead and hurried it to a full weight, and that
    import took the cores from the jobs before it. It hurries it to its place's weight
    (YIELD), and the sandbox follows the job's turn once taken."""
    import threading

    stub = _SlowToImport()
    p = SandboxPool(stub, per_key=1, max_idle=4, spawners=2)  # type: ignore[arg-type]
    p.turns = Turns(cores=1)
    running = p.turns.enter(light=False)  # a job on the only core
    try:
        threading.Thread(target=p.import_ahead, args=(("torch",), 1 << 20), daemon=True).start()
        deadline = time.monotonic() + 10
        while not stub.made and time.monotonic() < deadline:
            time.sleep(0.01)
        torch = stub.made[0]
        behind = p.turns.enter(light=False)
        got: list[object] = []

        def wait() -> None:
            p._local.turn = behind  # noqa: SLF001 - as run() sets it
            got.append(p.acquire(Kind(("torch",)), 1 << 20))

        waiter = threading.Thread(target=wait)
        waiter.start()
        assert torch.hurried.wait(5), "the awaited sandbox kept a spare's weight"
        assert torch.weights == [CpuPriority.YIELD]
        p.turns.leave(running)  # the job before it ends
        stub.release.set()
        waiter.join(10)
        assert got == [torch]
        assert torch.weights[-1] is CpuPriority.NORMAL
    finally:
        stub.release.set()
        p.close()
