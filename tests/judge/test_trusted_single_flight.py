"""One trusted process per key at a time: a caller that needs outputs another thread's process
is computing (a worker's background computation) waits for them instead of computing them
again, raises that process's priority when it is in the foreground, and is never left waiting
when that process fails.

The package is the `double` fixture with a gate: its reference and its known mistake wait for
a file the test creates, so a trusted process stays alive while the test looks at it and no
assertion depends on how fast the machine is."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judge.package import Package, load_package
from judge.trusted import expected, known_mistakes
from judge.trusted.expected import ReferenceError_, expected_outputs
from judge.trusted.known_mistakes import bank
from tests.adversarial.harness import host_processes
from tests.conftest import FIXTURES

pytestmark = pytest.mark.timeout(300)

GATE = '''import os
import time

GATE = {gate!r}
MARK = {mark!r}


def wait_for_the_gate():
    # Held shut by the test while it looks at this process; never for more than two minutes.
    deadline = time.monotonic() + 120
    while not os.path.exists(GATE) and time.monotonic() < deadline:
        time.sleep(0.02)


def first_call():
    try:
        os.close(os.open(MARK, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True
'''

FAILS = {
    "never": "",
    "once": "    if first_call():\n        raise RuntimeError('the reference fails this once')\n",
    "always": "    raise RuntimeError('the reference always fails')\n",
}


def gated(tmp_path: Path, fails: str = "never") -> tuple[Package, Path]:
    """The `double` package whose reference and known mistake wait for the returned gate."""
    pkg = tmp_path / "double"
    shutil.copytree(FIXTURES / "double", pkg)
    head = GATE.format(gate=str(tmp_path / "gate"), mark=str(tmp_path / "mark"))
    (pkg / "reference.py").write_text(
        f"{head}\n\ndef double(x):\n    wait_for_the_gate()\n{FAILS[fails]}"
        "    return (2 * x).reshape(-1)\n")
    (pkg / "submissions/wrong_answer/add_one.py").write_text(
        f"# adds instead of doubling\n{head}\n\ndef double(x):\n    wait_for_the_gate()\n"
        "    return x + 1\n")
    return load_package(pkg), tmp_path / "gate"


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[subprocess.Popen[bytes]]:
    """The trusted processes judge.trusted.expected starts (the real ones, counted), with a cache of
    this test's own."""
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    procs: list[subprocess.Popen[bytes]] = []

    class Counted(subprocess.Popen):
        def __init__(self, args: Any, *rest: Any, **kwargs: Any) -> None:
            super().__init__(args, *rest, **kwargs)
            if "judge.trusted.reference_run" in args:
                procs.append(self)

    monkeypatch.setattr(expected.subprocess, "Popen", Counted)
    return procs


class Call(threading.Thread):
    """A call in a thread of its own, its result or its exception kept."""

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().__init__(daemon=True)
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn(*self.args, **self.kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            self.error = e

    def outcome(self) -> Any:
        self.join(timeout=180)
        assert not self.is_alive(), f"{self.fn.__name__} still waiting"
        if self.error is not None:
            raise self.error
        return self.result


def until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {timeout} s")
        time.sleep(0.02)


def waiting(call: Call) -> bool:
    """Whether `call` is waiting for another thread's trusted process."""
    frame = sys._current_frames().get(call.ident or -1)
    while frame is not None:
        if frame.f_code is expected._wait.__code__:
            return True
        frame = frame.f_back
    return False


def ask(kind: str, package: Package, background: bool) -> list[np.ndarray]:
    """The trusted outputs one caller asks for: the expected ones or the known mistakes'."""
    if kind == "expected":
        return expected_outputs(package, package.tests, background=background)
    known = bank(package, package.tests, background=background)
    assert [m.file for m in known] == ["add_one.py"]
    outputs = known[0].outputs
    assert all(o is not None for o in outputs)
    return [o for o in outputs if o is not None]


def doubled(package: Package) -> list[np.ndarray]:
    return [np.asarray(2 * package.generator.generate(t.seed, **t.params)["x"],
                       dtype=np.float64).reshape(-1) for t in package.tests]


def niceness(pid: int) -> tuple[list[int], int | None]:
    """Each thread's niceness in process `pid`, and its autogroup's (None: no autogroups)."""
    threads = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # a thread that just ended
            threads.append(os.getpriority(os.PRIO_PROCESS, int(tid)))
    try:
        group = int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except OSError:
        group = None
    return threads, group


def may_lower_niceness() -> bool:
    """CAP_SYS_NICE (bit 23), or a RLIMIT_NICE that allows going back to this niceness."""
    caps = next(line for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("CapEff:"))
    own = os.getpriority(os.PRIO_PROCESS, 0)
    return bool(int(caps.split()[1], 16) >> 23 & 1) or \
        resource.getrlimit(resource.RLIMIT_NICE)[0] >= 20 - own


@pytest.mark.parametrize("kind", ["expected", "bank"])
def test_a_foreground_caller_waits_for_the_background_process(
        kind: str, tmp_path: Path, started: list[subprocess.Popen[bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    package, gate = gated(tmp_path)
    background = Call(ask, kind, package, True)
    background.start()
    until(lambda: len(started) == 1, "background process")
    foreground = Call(ask, kind, package, False)
    foreground.start()
    until(lambda: len(started) > 1 or waiting(foreground), "waiting foreground caller")
    gate.touch()
    a, b = background.outcome(), foreground.outcome()
    assert len(started) == 1, "the same outputs computed twice"

    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(tmp_path / "single"))
    known_mistakes._BANKS.clear()
    single = ask(kind, package, False)
    assert len(started) == 2
    assert len(a) == len(b) == len(single) == len(package.tests)
    for x, y, z in zip(a, b, single, strict=True):
        assert np.array_equal(x, z) and np.array_equal(y, z)
    if kind == "expected":
        assert all(np.array_equal(x, y) for x, y in zip(a, doubled(package), strict=True))


def test_a_foreground_waiter_raises_the_background_process_priority(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    group_exists = os.path.exists("/proc/self/autogroup")
    threads_too = may_lower_niceness()
    if not (group_exists or threads_too):
        pytest.skip("neither a niceness nor an autogroup this process may raise")
    own = os.getpriority(os.PRIO_PROCESS, 0)
    package, gate = gated(tmp_path)
    background = Call(bank, package, package.tests, background=True)
    background.start()
    until(lambda: len(started) == 1, "background process")
    pid = started[0].pid
    # The process lowers itself once it has read its request.
    until(lambda: max(niceness(pid)[0]) > own, "lowered priority")
    if group_exists:
        until(lambda: niceness(pid)[1] == 15, "lowered autogroup")

    def raised() -> bool:
        threads, group = niceness(pid)
        return (not threads_too or all(n == own for n in threads)) and group in (None, 0)

    foreground = Call(bank, package, package.tests)
    foreground.start()
    until(lambda: len(started) > 1 or raised(), "raised priority")
    assert started[0].returncode is None, "the background process ended before it was raised"
    gate.touch()
    a, b = background.outcome(), foreground.outcome()
    assert [m.file for m in a] == [m.file for m in b] == ["add_one.py"]
    assert all(np.array_equal(x, y) for x, y in zip(a[0].outputs, b[0].outputs, strict=True))
    assert len(started) == 1


@pytest.mark.parametrize("fails", ["once", "always"])
def test_a_failed_computation_releases_its_keys_to_its_waiters(
        fails: str, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    package, gate = gated(tmp_path, fails)
    background = Call(expected_outputs, package, package.tests, background=True)
    background.start()
    until(lambda: len(started) == 1, "background process")
    foreground = Call(expected_outputs, package, package.tests)
    foreground.start()
    until(lambda: len(started) > 1 or waiting(foreground), "waiting foreground caller")
    gate.touch()
    with pytest.raises(ReferenceError_):
        background.outcome()
    # The waiter computed what the failed process did not store, itself, once.
    if fails == "once":
        got = foreground.outcome()
        assert all(np.array_equal(x, y) for x, y in zip(got, doubled(package), strict=True))
    else:
        with pytest.raises(ReferenceError_, match="always fails"):
            foreground.outcome()
    assert len(started) == 2
    # Nothing is left claimed: the next caller computes (or reads) at once.
    if fails == "once":
        expected_outputs(package, package.tests)
        assert len(started) == 2
    else:
        with pytest.raises(ReferenceError_, match="always fails"):
            expected_outputs(package, package.tests)
        assert len(started) == 3


def _children(pid: int, marker: str) -> list[int]:
    return [child for child, (ppid, _uid, _zombie, _groups, cmd) in host_processes().items()
            if ppid == pid and marker in cmd]


@pytest.mark.parametrize("background", [True, False])
def test_a_trusted_process_ends_with_the_judge_that_started_it(
        tmp_path: Path, background: bool) -> None:
    """A judge that stops (killed, or its threads cut short at exit) leaves no trusted process
    computing: here the reference waits for a gate that never opens, and would live two
    minutes."""
    package, _gate = gated(tmp_path)
    judge_proc = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom judge.package import load_package\n"
         "from judge.trusted.expected import expected_outputs\n"
         "p = load_package(sys.argv[1])\n"
         f"expected_outputs(p, p.tests, background={background})\n", str(package.path)],
        env={**os.environ, "TENSORJUDGE_CACHE_DIR": str(tmp_path / "cache")},
        cwd=Path(__file__).resolve().parents[2])
    try:
        found: list[int] = []

        def started() -> bool:
            found[:] = _children(judge_proc.pid, "judge.trusted.reference_run")
            return bool(found)

        until(started, "trusted process")
        judge_proc.kill()
        judge_proc.wait()
        until(lambda: host_processes().get(found[0], (0, 0, True))[2],
              "end of the trusted process", timeout=30)
    finally:
        judge_proc.kill()
        judge_proc.wait()
