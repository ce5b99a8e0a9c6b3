"""Expected outputs: computed by the reference in a separate trusted process, cached by content.

The key covers everything the numbers depend on: reference and generator source, the test's
seed and parameters, the precision, the exact versions of the numeric libraries, and the
judge's own trusted code that computes and stores them (judge/trusted/code.py). Each key
is computed once at a time in this process (`run_trusted`): a caller that needs outputs a
worker's background computation is producing waits for them, and raises its priority. Across
processes sharing the cache folder (the workers of a deployment), a lock file per key makes
one compute and the others read.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np

from judge.package import Package, TestSpec
from judge.trusted.code import code_hash

LIBRARIES = ("numpy", "jax", "jaxlib", "flax", "torch")


class ReferenceError_(RuntimeError):
    """The reference failed: a package or judge fault, never the submission's."""


@cache
def library_versions() -> dict[str, str]:
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def cache_dir() -> Path:
    configured = os.environ.get("TENSORJUDGE_CACHE_DIR")
    if configured:
        root = Path(configured)
    else:
        import platformdirs

        root = Path(platformdirs.user_cache_dir("tensorjudge"))
    d = root / "expected"
    d.mkdir(parents=True, exist_ok=True)
    return d


def trusted_compile_cache() -> Path:
    """The trusted processes' own JAX compilation cache (one per JAX version), beside their
    outputs unless TENSORJUDGE_TRUSTED_COMPILE_CACHE says where. Only trusted code compiles
    into it (references, their mutants, packaged mistakes); no sandbox reads it."""
    configured = os.environ.get("TENSORJUDGE_TRUSTED_COMPILE_CACHE")
    root = Path(configured) if configured else cache_dir().parent / "xla-trusted"
    return root / f"jaxlib-{library_versions()['jaxlib']}"


def trusted_env() -> dict[str, str]:
    """A trusted process's environment: the judge's, without its settings, on the CPU, with
    the trusted compilation cache. A new process loads what earlier ones compiled instead of
    compiling every operation again (a Flax reference's first pass over its tests: about
    20 s compiling, 4 s loading). No size bound: with one, JAX locks the folder and lists it
    on every write (quadratic in its entries). Processes running at once may then read an
    entry while another writes it; the entries are compressed, so such a read fails to
    decompress and JAX compiles instead (it warns, nothing else)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORJUDGE_")}
    env["JAX_PLATFORMS"] = "cpu"
    env["JAX_COMPILATION_CACHE_DIR"] = str(trusted_compile_cache())
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "-1"
    return env


def test_key(package: Package, test: TestSpec, float64: bool = False,
             source: str | None = None) -> str:
    """The cache key of one output: of the reference, or of another trusted module of the
    package given by its `source` (a known mistake, judge/trusted/known_mistakes.py). The
    trusted code's hash is in it: an output another version of that code stored is not
    this one's."""
    h = hashlib.sha256()
    h.update((package.reference_source if source is None else source).encode())
    h.update(package.generator_path.read_bytes())
    h.update(package.entry_point.encode())
    h.update(json.dumps(
        {"seed": test.seed, "params": test.params, "float64": float64,
         "redraw": test.redraw.model_dump() if test.redraw else None,
         "versions": library_versions(), "code": code_hash()}, sort_keys=True).encode())
    return h.hexdigest()


def expected_outputs(
    package: Package, tests: list[TestSpec], *, float64: bool = False, background: bool = False
) -> list[np.ndarray]:
    """Flat float64 expected outputs, one per test, in order (`background`: computed at low
    CPU priority, ahead of the first submission)."""
    d = cache_dir()
    keys = [test_key(package, t, float64) for t in tests]
    missing = _missing(d, tests, keys)
    if missing:
        run_trusted(package, [{"name": n, "key": k} for n, k in missing], float64, d,
                    background=background)
    return [np.load(d / f"{k}.npy", allow_pickle=False) for k in keys]


def missing_outputs(package: Package, tests: list[TestSpec], float64: bool = False
                    ) -> list[tuple[str, str]]:
    """The name and key of each test whose expected output is not stored yet."""
    return _missing(cache_dir(), tests, [test_key(package, t, float64) for t in tests])


def _missing(d: Path, tests: list[TestSpec], keys: list[str]) -> list[tuple[str, str]]:
    return [(t.name, k) for t, k in zip(tests, keys, strict=True)
            if not (d / f"{k}.npy").is_file()]


TIMEOUT_S = 900  # one trusted process
# A wait for another caller's process: its own timeout, then the kill and the reap.
WAIT_S = TIMEOUT_S + 60


def run_trusted(package: Package, items: list[dict[str, str]], float64: bool, d: Path,
                *, background: bool = False) -> None:
    """Run `judge.trusted.reference_run` on `items` ({name, key} and optionally `module`, a package
    file run instead of the reference), in a separate process with the judge's libraries;
    `background`: at low CPU priority (work no job is waiting for).

    One flight per key in this process: keys another thread's process is computing are waited
    for rather than computed again (a worker's background computation and the first
    submissions that need the same outputs), and what that process failed to store is then
    computed here."""
    pending = items
    while pending:
        flight, mine, others = _claim(d, pending, float64, background)
        if mine:
            try:
                with _key_locks(d, [item["key"] for item in mine]):
                    # Another process may have stored some while this one waited for them.
                    todo = [item for item in mine if not _stored(d, item, float64)]
                    if todo:
                        _run(package, todo, float64, d, flight)
            finally:
                _release(d, mine, flight)
        for other in others:
            _wait(package, other, background)
        ran = {item["key"] for item in mine}
        pending = [item for item in pending
                   if item["key"] not in ran and not _stored(d, item, float64)]


@dataclass(eq=False)
class _Flight:
    """One trusted process and the keys it claimed, as the threads waiting for them see it."""

    background: bool
    done: threading.Event = field(default_factory=threading.Event)
    proc: subprocess.Popen[bytes] | None = None


_FLIGHTS: dict[Path, _Flight] = {}  # cache_dir() / key -> the flight computing it
_FLIGHTS_LOCK = threading.Lock()


def _claim(d: Path, items: list[dict[str, str]], float64: bool,
           background: bool) -> tuple[_Flight, list[dict[str, str]], list[_Flight]]:
    """A new flight with the items no one is computing and that are not stored (checked under
    the lock: a flight stores before it releases), and the flights computing the others."""
    flight = _Flight(background)
    mine: list[dict[str, str]] = []
    others: list[_Flight] = []
    with _FLIGHTS_LOCK:
        for item in items:
            running = _FLIGHTS.get(d / item["key"])
            if running is flight:  # two tests with the same seed and parameters
                mine.append(item)
            elif running is not None:
                if running not in others:
                    others.append(running)
            elif not _stored(d, item, float64):
                _FLIGHTS[d / item["key"]] = flight
                mine.append(item)
    return flight, mine, others


@contextlib.contextmanager
def _key_locks(d: Path, keys: list[str]) -> Iterator[None]:
    """Exclusive locks on `keys` against other processes using the folder, taken in order
    (two processes never wait for each other). Held by open files: a process that dies
    releases them."""
    locks = d / "locks"
    locks.mkdir(exist_ok=True)
    held: list[int] = []
    try:
        for key in sorted(set(keys)):
            fd = os.open(locks / key, os.O_RDWR | os.O_CREAT, 0o644)
            held.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in held:
            os.close(fd)


def _release(d: Path, mine: list[dict[str, str]], flight: _Flight) -> None:
    with _FLIGHTS_LOCK:
        for item in mine:
            _FLIGHTS.pop(d / item["key"], None)
    # After the keys are free: a waiter that finds one still missing claims it at once.
    flight.done.set()


def _stored(d: Path, item: dict[str, str], float64: bool) -> bool:
    """Whether `item`'s results are in `d`, as judge.trusted.reference_run writes them: a
    known mistake's output or its failure; the reference's output, and its variables
    (judge/diagnosis/params.py) unless in float64."""
    k = item["key"]
    if item.get("module") is not None:
        return (d / f"{k}.npy").is_file() or (d / f"{k}.failed").is_file()
    return (d / f"{k}.npy").is_file() and (float64 or (d / f"{k}.variables.json").is_file())


def _wait(package: Package, flight: _Flight, background: bool) -> None:
    """Wait for another thread's flight. A foreground caller must not wait at background
    priority: the process is raised again, and again every second, since it lowers itself
    only once it has read its request and its threads may start after a raise."""
    deadline = time.monotonic() + WAIT_S
    while True:
        proc = flight.proc
        # returncode None: not reaped yet, so the pid is still this process's.
        if not background and flight.background and proc is not None and proc.returncode is None:
            _raise_priority(proc.pid)
        if flight.done.wait(1.0):
            return
        if time.monotonic() > deadline:
            raise ReferenceError_(f"the trusted outputs of {package.slug} were still being "
                                  f"computed by another thread after {WAIT_S} s")


def _raise_priority(pid: int) -> None:
    """Undo judge.trusted.reference_run's `_lower_priority` in process `pid`: its niceness, which on
    Linux is per thread (back to this thread's), and its session's autogroup's (back to a new
    group's 0). Best effort: without CAP_SYS_NICE the kernel refuses to lower a niceness
    (EACCES) though it lets an autogroup's go back to 0; the process may also be gone."""
    own = os.getpriority(os.PRIO_PROCESS, 0)
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                if os.getpriority(os.PRIO_PROCESS, int(tid)) > own:
                    os.setpriority(os.PRIO_PROCESS, int(tid), own)
    group = Path(f"/proc/{pid}/autogroup")
    # Written only when it differs: the kernel rate-limits these writes ("/autogroup-7 nice 15").
    with contextlib.suppress(OSError, ValueError, IndexError):
        if int(group.read_text().split()[-1]) > 0:
            group.write_text("0")


def _run(package: Package, items: list[dict[str, str]], float64: bool, d: Path,
         flight: _Flight) -> None:
    """One trusted process on `items`, made known to `flight`'s waiters (a Popen rather than
    subprocess.run for that), with subprocess.run's timeout handling."""
    request = {
        "package": str(package.path),
        "tests": items,
        "float64": float64,
        "out_dir": str(d),
        "background": flight.background,
        "judge_pid": os.getpid(),
    }
    with subprocess.Popen(
        [sys.executable, "-m", "judge.trusted.reference_run"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=trusted_env(),
        start_new_session=flight.background,
    ) as proc:
        flight.proc = proc
        try:
            _, stderr = proc.communicate(json.dumps(request).encode(), timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        except BaseException:
            proc.kill()  # the with block's exit waits for it
            raise
    if proc.returncode != 0:
        tail = stderr.decode(errors="replace")[-3000:]
        raise ReferenceError_(f"the reference of {package.slug} failed:\n{tail}")
