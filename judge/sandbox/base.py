"""What every sandbox backend shares, and the one small interface they all offer.

A backend starts single-use sandboxes that run `runner.py`: it is sent its preparation
(imports, warm-up) at start and one job later, and reports on a private result channel. How a
sandbox is started, confined, fed and killed is the backend's (bubblewrap on this host, a
container through a Docker engine); the messages, the limits the runner sets itself, the wait
for preparation and the I/O loop (io_loop.py) are the same for all.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from judge.sandbox.io_loop import RawRun, RunPlan, SandboxProcess, pump
from judge.sandbox.job import Job, Kind
from judge.sandbox.priority import CpuPriority
from judge.sandbox.turns import Turn
from judge.wire import FrameReader

XLA_CACHE_IN_SANDBOX = "/opt/tensorjudge/xla-cache"


class SandboxUnavailable(RuntimeError):
    """The host cannot run the sandbox at all: a start-up error, not a verdict."""


class Started(Protocol):
    """One started sandbox, as a pool holds it until its job comes."""

    reader: FrameReader
    t_spawn: float
    warm_ms: float | None

    @property
    def chan_r(self) -> int: ...  # the read end of its result channel

    def alive(self) -> bool: ...
    def destroy(self) -> None: ...
    def memory_bytes(self) -> int | None: ...
    # The sandbox's CPU time so far, all its processes (None where the backend cannot read
    # it): the clock its time limits run on (io_loop.pump).
    def cpu_seconds(self) -> float | None: ...
    # Whether a thread of it is running or waiting for a CPU now (False where unknown).
    def computing(self) -> bool: ...
    def foreground(self) -> None: ...  # its job's CPU priority (spares prepare niced)
    # Its job's CPU priority from now on (the job's place in line moved: turns.py).
    def weigh(self, priority: CpuPriority) -> None: ...


# How a backend gets another sandbox of a kind while it runs a job (a pool's prepared one, or
# a fresh one): where a job must run again in another kind of sandbox.
Acquire = Callable[[Kind, int], Started]
# What a backend does with a sandbox whose run finished (its runner reported a final frame):
# hands it to the pool, which destroys it off the verdict's path.
Retire = Callable[[Started], None]


class Backend(Protocol):
    """A way to start sandboxes: the pool, and through it the engine, use only this. `sp` is
    what the backend's own spawn() returned (each backend has its own)."""

    name: str  # bwrap | docker: what judged a submission, in its result
    # Whether starting and tearing down its sandboxes is the host's own work (a container
    # engine's, at the host's priority, where no sandbox's CPU weight reaches): then a pool
    # does it once a judgement is over, not beside it (SandboxPool.judgement).
    upkeep_after_judgement: bool

    def route(self, job: Job) -> Kind:
        """The kind of sandbox this job is started in: the job's own, or a variant of it
        the backend prefers for such jobs."""
        ...

    def spawn(self, kind: Kind, memory_bytes: int, *, background: bool = False,
              turn: Turn | None = None) -> Started:
        """A sandbox of `kind` started, preparing (`background`: a spare, at the lowest
        weight); `turn`: the place in line of the job it is started for (turns.py)."""
        ...

    def wait_warm(self, sp: Any, timeout_s: float) -> bool:
        """Until `sp` has prepared; False if it died or took longer (then it is useless)."""
        ...

    def execute(self, sp: Any, job: Job, tests_args: list[dict], plan: RunPlan,
                acquire: Acquire, retire: Retire) -> RawRun:
        """Run the job in the started sandbox `sp`, then destroy it, or `retire` it where its
        run finished; `acquire` gives another sandbox where the backend must run the job
        again."""
        ...

    def fill_compile_cache(self, kind: Kind, memory_bytes: int) -> bool: ...

    def compile_cache_holds(self, kind: Kind) -> bool:
        """Whether the judge's compilation cache holds `kind`'s warm-up already (a sandbox of
        the kind then prepares in moments: its warm-up loads what it would compile)."""
        ...

    def import_ahead(self, preload: tuple[str, ...]) -> bool:
        """Have `preload` imported, now, where sandboxes of kinds importing it ahead start
        from (a fork server), so that the first of them does not import it on its job's
        path. Returns once it is done: whether the backend has such a place (where it has
        none, the pool keeps a sandbox that imported them instead)."""
        ...

    def shared_memory_bytes(self) -> int: ...
    def close(self) -> None: ...


def sandbox_env() -> dict[str, str]:
    """The whole environment a sandbox's processes see."""
    return {
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PATH": "/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
        "JAX_PLATFORMS": "cpu",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        # XLA's concurrency-optimised schedule runs independent parts of a computation on
        # its thread pool; a sandbox forked from a warmed server has no pool threads and
        # would wait for them forever. One schedule for every sandbox keeps the judge's
        # compilation cache's keys the same for all of them.
        "XLA_FLAGS": "--xla_cpu_enable_concurrency_optimized_scheduler=false",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }


def host_env() -> dict[str, str]:
    """bubblewrap's own processes keep their environment readable in /proc inside the
    sandbox, so they start with nothing of the judge's."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def prepare_message(kind: Kind, site_dirs: list[str], jax_cache_dir: str | None,
                    channel_fd: int, *, library_patches: bool = True) -> dict:
    """The first message a sandbox reads: where its libraries are, what to import and warm,
    and whether its patches of JAX's and Flax's internals are allowed (judge/inside/
    library_patches.py: off, the libraries run as they ship, more slowly)."""
    return {
        "site_dirs": site_dirs,
        "jax_cache_dir": jax_cache_dir,
        **kind.prepare_message(),
        "channel_fd": channel_fd,
        "library_patches": library_patches,
    }


def job_message(job: Job, plan: RunPlan, *, seccomp: bool, rlimits: dict) -> dict:
    """The one job a prepared sandbox runs (the tests' arrays follow it on the wire)."""
    return {
        "code": job.code,
        "entry": job.entry,
        "expected_sizes": plan.expected_sizes,
        "redraws": plan.redraws,
        "seccomp": seccomp,
        "rlimits": rlimits,
    }


def rlimits(plan: RunPlan, memory_cgroup: bool) -> dict:
    """The limits the runner sets on itself once its imports are done."""
    return {
        "cpu_s": plan.cpu_seconds,
        "fsize": 16 << 20,
        "nofile": 256,
        "nproc": 0 if memory_cgroup else 512,
        # Without a memory cgroup, address space is the only brake (JAX reserves a lot of
        # it, so allow generous headroom).
        "as_bytes": 0 if memory_cgroup else plan.memory_bytes * 3,
    }


def wait_warm(sp: Started, timeout_s: float) -> bool:
    """Block until the sandbox reports its preparation done; False if it died or took longer
    than the timeout (then it is useless and should be discarded)."""
    deadline = time.monotonic() + timeout_s
    while sp.reader.error is None and not any(f.ev == "warm" for f in sp.reader.frames):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([sp.chan_r], [], [], left)
        if ready:
            data = os.read(sp.chan_r, 1 << 16)
            if not data:
                return False
            sp.reader.feed(data)
    sp.warm_ms = (time.monotonic() - sp.t_spawn) * 1000.0
    return sp.reader.error is None


def higher(a: CpuPriority | None, b: CpuPriority | None) -> CpuPriority | None:
    """The weight owed to the first in line of two waiting jobs (None: a kind's own weight,
    which no place in line exceeds)."""
    return None if a is None or b is None else max(a, b)


def hurry(sp: Started, priority: CpuPriority | None = None) -> None:
    """A sandbox still preparing that a job waits for is no longer a spare: the weight of the
    job's place in line (`priority`: turns.py; None, its kind's), applied in a thread of its
    own (a backend may have to ask its engine). Not its kind's weight whatever the place: on a
    fresh start the first PyTorch job, behind two JAX jobs on two cores, hurried the sandbox
    importing PyTorch ahead to a full weight, and it took the cores from the jobs before it."""
    if priority is not None:
        sp.weigh(priority)  # a spare only notes it (foreground applies it)
    threading.Thread(target=sp.foreground, name="tj-hurry", daemon=True).start()


def run_job(sp: Started, proc: SandboxProcess, job: bytes, plan: RunPlan,
            kill: Callable[[], None], startup_timeout_s: float) -> RawRun:
    """One job through a started sandbox's pipes, on its CPU clock (io_loop.pump); a sandbox
    the loop itself failed on is destroyed before the error goes on."""
    try:
        return pump(proc, sp.chan_r, job, plan, kill, startup_timeout_s, reader=sp.reader,
                    cpu=sp.cpu_seconds, computing=sp.computing)
    except BaseException:
        sp.destroy()
        raise
