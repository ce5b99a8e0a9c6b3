"""What the judge does before its first submission, so that later ones find it done: per
problem, the compilation cache filled and a prepared sandbox kept ready for each kind of
submission, and the trusted outputs (expected, and the known mistakes') computed.

None of it stands between a learner and a verdict. A job being judged needs only its own
sandbox and its own problem's expected outputs, and gets both at normal priority on its own
path (a kind not ready yet runs in a sandbox that prepares itself without the warm-up:
judge/sandbox/pool.py; the expected outputs are computed, or raised to normal priority if
this work was computing them: judge/trusted/expected.py). This work runs in the background
(niced sandboxes and processes) and gives way: while a job is being judged (`serving`) it
starts no new step, and the problems jobs asked for come first when it resumes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from judge.kinds import framework_preloads, kinds_for
from judge.package import Package
from judge.prepared import prepare
from judge.sandbox.job import Kind
from judge.sandbox.pool import SandboxPool
from judge.trusted.expected import expected_outputs, missing_outputs
from judge.trusted.known_mistakes import bank, mutant_bank, prepare_mutant_banks
from judge.trusted.variant_outputs import prepare_variant_bank, variant_bank

# The records keep the logger name they had while this lived in the workers (app.worker).
log = logging.getLogger("tensorjudge.worker")
# The memory limit that spare starts with; a job sets its own problem's before it runs.
QUICK_KIND_MEMORY = 512 << 20
# The memory limit a sandbox importing a framework ahead starts with (where the pool keeps
# one: SandboxPool.import_ahead); its job, too, sets its own problem's.
IMPORT_AHEAD_MEMORY = 1 << 30


@dataclass(frozen=True)
class _Step:
    problem: str  # the package's content hash
    what: str
    run: Callable[[], None]
    # Its work is done in the judge's own process, holding the interpreter (loading what is
    # stored: the mutants' outcomes), not in sandboxes or trusted processes: it waits for a
    # pause in the jobs (Startup.quiet_s), or it would hold up the requests and the jobs of
    # a fresh start, every one of which needs that interpreter for moments.
    in_process: bool = False


class Startup:
    """One judge process's start-up work, and the jobs it gives way to. `run` does the
    work (in a thread of its own); the workers wrap each judgement in `serving`."""

    def __init__(self, pool: SandboxPool, stopping: threading.Event, *,
                 max_pause_s: float = 60.0, quiet_s: float = 2.0):
        self.pool = pool
        self.stopping = stopping
        # Under a load that never pauses, the work still goes on (at its low priority) after
        # this long: without it every job would keep paying for kinds never prepared.
        self.max_pause_s = max_pause_s
        self._cond = threading.Condition()
        self._serving = 0
        self._asked: list[str] = []  # problems jobs asked for, latest last
        # A step in the judge's own process waits until no job has been judged for this long
        # (nor, at the start, since the start: the first jobs come right after it).
        self.quiet_s = quiet_s
        self._last_job = time.monotonic()

    @contextmanager
    def serving(self, package: Package) -> Iterator[None]:
        """Around the judgement of one job (someone waits for its verdict): no step of the
        start-up work starts meanwhile, and the job's problem is prepared first after it."""
        with self._cond:
            self._serving += 1
            if package.content_hash in self._asked:
                self._asked.remove(package.content_hash)
            self._asked.append(package.content_hash)
        try:
            yield
        finally:
            with self._cond:
                self._serving -= 1
                self._last_job = time.monotonic()
                self._cond.notify_all()

    def begin(self, wait_s: float, *, import_ahead: bool = False) -> bool:
        """The first step (`begin`), for this judge's pool."""
        return begin(self.pool, wait_s, import_ahead=import_ahead)

    @property
    def jobs_being_served(self) -> int:
        with self._cond:
            return self._serving

    def run(self, packages: list[Package]) -> None:
        """Do the whole start-up work, step by step, giving way to jobs; stops early once
        `stopping` is set. A failure of the pool itself is raised (the pool then prepares on
        demand)."""
        steps = self._plan(packages)
        while steps and not self.stopping.is_set():
            # The steps in the judge's own process come last, after a pause in the jobs.
            outside = [step for step in steps if not step.in_process]
            self._give_way(quiet=not outside)
            if self.stopping.is_set():
                return
            choice = outside or steps
            step = choice[self._next(choice)]
            steps.remove(step)
            step.run()
        if not self.stopping.is_set():
            log.info("sandboxes prepared", extra={"problems": len(packages)})

    def _plan(self, packages: list[Package]) -> list[_Step]:
        """Every problem's tests in memory where their expected outputs are stored (moments),
        then every problem's kinds but eager JAX's, then the trusted outputs (the known
        mistakes matter only to a wrong answer), then eager JAX's kinds: the longest to fill
        and the least used; then the mutants' outcomes."""
        steps = [_Step(package.content_hash, "tests", partial(_prepare_stored_tests, package))
                 for package in packages]
        later: list[_Step] = []
        for package in packages:
            for kind in kinds_for(package):
                step = _Step(package.content_hash, f"kind {kind.key}",
                             _prepare_kind_step(self.pool, package, kind))
                (later if kind.eager_jax else steps).append(step)
        for package in packages:
            steps.append(_Step(package.content_hash, "trusted outputs",
                               partial(_compute_trusted_outputs, package)))
        # Last: only a wrong answer's naming and location need the mutants' outcomes and the
        # reference's switched-off variants.
        mutant_steps = [_Step(package.content_hash, "mutant outcomes",
                              partial(prepare_mutant_banks, [package], self.stopping),
                              in_process=True)
                        for package in packages]
        variant_steps = [_Step(package.content_hash, "sub-layer variants",
                               partial(prepare_variant_bank, package),
                               in_process=True)
                         for package in packages]
        return steps + later + mutant_steps + variant_steps

    def _next(self, steps: list[_Step]) -> int:
        """The first step of the problem a job asked for most recently, else the first."""
        with self._cond:
            asked = list(reversed(self._asked))
        for problem in asked:
            for i, step in enumerate(steps):
                if step.problem == problem:
                    return i
        return 0

    def _give_way(self, *, quiet: bool = False) -> None:
        """Wait while jobs are being judged, and with `quiet` until none has been for
        `quiet_s` (at most `max_pause_s` in a row)."""
        deadline = time.monotonic() + self.max_pause_s
        with self._cond:
            while not self.stopping.is_set():
                now = time.monotonic()
                calm = self._last_job + self.quiet_s - now if quiet else 0.0
                if not self._serving and calm <= 0:
                    return
                left = deadline - now
                if left <= 0:
                    return
                self._cond.wait(timeout=min(left, 0.5, calm) if calm > 0 else min(left, 0.5))


def begin(pool: SandboxPool, wait_s: float, *, import_ahead: bool = False) -> bool:
    """The first step, before the problems are even loaded: a spare of the kind that
    imports no framework (NumPy submissions), waited for up to `wait_s`. It is the same
    kind for every problem and ready in a fraction of a second, so the first NumPy
    submission on a fresh machine finds it (and the fork server it comes from) instead
    of starting them on its own path. Whether it was ready in time (a pool that fails
    here is said in the log: jobs then start their own sandboxes).

    `import_ahead`: then, not waited for, each framework's libraries imported where
    its sandboxes start from (`Backend.import_ahead`), at normal priority: the first
    Submit of each framework, on a fresh machine, forks from them (or waits for the one
    being started) rather than import them on its own path. Every kind's sandboxes
    need them anyway; this only starts them before the first job. Started after the
    NumPy spare, not beside it, so that the service answers no later for them.

    What is started already (by `begin_soon`) is not started again."""
    try:
        pool.prewarm(Kind(), QUICK_KIND_MEMORY)
        ready = pool.wait_ready(1, wait_s)
    except Exception as e:  # noqa: BLE001 - the rest of the start-up work goes on
        log.warning("no spare before the first job", extra={"error": str(e)})
        ready = False
    if import_ahead:
        for preload in framework_preloads():
            threading.Thread(target=_import_ahead, args=(pool, preload),
                             name="import-ahead", daemon=True).start()
    return ready


def begin_soon(pool: SandboxPool, *, import_ahead: bool = False) -> None:
    """`begin`, in the background from now: for a process with more to do before its
    workers start (`serve` imports its web application and migrates its database, a second
    or two), so that the NumPy spare and the imports ahead are on their way meanwhile. The
    first verdict of a framework comes that much sooner, and the spare the service waits
    for before it answers is ready sooner too."""
    threading.Thread(target=begin, args=(pool, 60.0), kwargs={"import_ahead": import_ahead},
                     name="startup-begin", daemon=True).start()


def _import_ahead(pool: SandboxPool, preload: tuple[str, ...]) -> None:
    try:
        pool.import_ahead(preload, IMPORT_AHEAD_MEMORY)
    except Exception as e:  # noqa: BLE001 - its first job imports them instead
        log.warning("libraries not imported ahead",
                    extra={"preload": list(preload), "error": str(e)})


def prepare_problems(pool: SandboxPool, packages: list[Package],
                     stopping: threading.Event, startup: Startup | None = None) -> None:
    """The start-up work for `packages` (`startup`: the one the workers' jobs tell of
    themselves; else one of its own, which no job slows)."""
    (startup or Startup(pool, stopping)).run(packages)


@dataclass(frozen=True)
class Prepared:
    """What `prepare_ahead` did for one problem, and how long each part took."""

    slug: str
    kinds: int  # kinds of submission the problem has (each one's warm-up filled)
    kinds_failed: int
    compile_cache_s: float
    trusted_outputs_s: float


def prepare_ahead(package: Package, sandbox: SandboxPool) -> Prepared:
    """Before any service starts (`tensorjudge problems prepare`, which `./dev setup` runs for
    the bundled problems): the compilation cache of every kind's warm-up filled, and the
    trusted outputs (expected, the known mistakes', and the reference's mutants' that the
    start-up would otherwise compute in the background) computed, so that a fresh machine's
    first submissions find them and its first wrong answers are named by the mutants too.
    Both are the judge's own work (no submission is involved) and are kept by content, so a
    second call finds them and returns in moments."""
    memory = package.manifest.limits.memory_mb << 20
    t0 = time.monotonic()
    kinds = failed = 0
    for kind in kinds_for(package):
        kinds += 1
        try:
            failed += not sandbox.fill_compile_cache(kind, memory)
        except Exception as e:  # noqa: BLE001 - the start-up work fills it later
            failed += 1
            log.warning("compilation cache not filled",
                        extra={"problem": package.slug, "kind": kind.key, "error": str(e)})
    t1 = time.monotonic()
    expected_outputs(package, package.tests)
    bank(package, package.tests)
    mutant_bank(package, wait=True)
    variant_bank(package, wait=True)
    return Prepared(package.slug, kinds, failed, t1 - t0, time.monotonic() - t1)


def _prepare_kind_step(pool: SandboxPool, package: Package, kind: Kind) -> Callable[[], None]:
    def step() -> None:
        """Fill the compilation cache for one kind of sandbox (a niced sandbox that runs
        only the judge's warm-up) and keep one ready."""
        memory = package.manifest.limits.memory_mb << 20
        try:
            pool.fill_compile_cache(kind, memory)
        except Exception as e:  # noqa: BLE001
            log.warning("compilation cache not filled",
                        extra={"problem": package.slug, "error": str(e)})
        pool.prewarm(kind, memory)

    return step


def _prepare_stored_tests(package: Package) -> None:
    """A Submit's and a Run's tests (inputs, shapes, expected outputs) in this process's
    memory (judge/prepared.py), where the outputs are stored already (the set-up computed
    them): a first job then neither generates its inputs nor reads the outputs, beside the
    other first jobs of a fresh machine. Outputs still to compute wait for their own step."""
    for samples_only in (False, True):
        try:
            if not missing_outputs(package, package.select(samples_only)):
                prepare(package, samples_only)
        except Exception as e:  # noqa: BLE001 - the first job prepares them instead
            log.warning("tests not prepared", extra={"problem": package.slug, "error": str(e)})


def _compute_trusted_outputs(package: Package) -> None:
    """The expected outputs and those of the package's known mistakes, computed (trusted,
    at low priority) before a submission needs them rather than on its path to a verdict."""
    try:
        expected_outputs(package, package.tests, background=True)
        bank(package, package.tests, background=True)
    except Exception as e:  # noqa: BLE001 - the first submission computes them instead
        log.warning("trusted outputs not computed",
                    extra={"problem": package.slug, "error": str(e)})
