"""A run still working against its memory limit when its time runs out is MLE, not TLE: with
no swap, a process at its limit can spend longer than any time limit having its own code's
pages evicted and read back before the OOM killer acts. The sign, read on the real cgroup at
the kill: usage at the limit and pages read back in (major faults) within a short window; a
process that reached its limit and then only computes or sleeps is not pressing it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.engine import judge
from judge.sandbox import BwrapConfig, BwrapSandbox
from judge.sandbox.bwrap.cgroups import Cgroup, CgroupManager
from judge.verdicts import Verdict

pytestmark = pytest.mark.sandbox

# Joins the group, then reads through a mapping of a file larger than the group's limit
# again and again: each page evicted to make room is read back in (a major fault) next time.
READER = """
import mmap, os, sys
for path in sys.argv[2:]:
    with open(path, "w") as f:
        f.write(str(os.getpid()))
with open(sys.argv[1], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print("in", flush=True)
total = 0
while True:
    for i in range(0, len(m), 4096):
        total += m[i]
"""

# Joins the group, fills most of its limit, then sleeps.
SLEEPER = """
import os, sys, time
for path in sys.argv[2:]:
    with open(path, "w") as f:
        f.write(str(os.getpid()))
block = bytearray(int(sys.argv[1]))
print("in", flush=True)
time.sleep(1000)
"""


@pytest.fixture
def group() -> Iterator[Cgroup]:
    manager = CgroupManager()
    if not manager.available:
        pytest.skip("no cgroups here")
    g = manager.create(64 << 20, 64)
    yield g
    g.remove()


def _start(group: Cgroup, source: str, arg: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", source, arg,
                             *[str(p) for p in group.procs_files]],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "in"
    return proc


def test_a_group_reading_past_its_limit_presses_it(group: Cgroup, tmp_path: Path):
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.write(os.urandom(1 << 20) * 192)  # three times the limit
        f.flush()
        os.fsync(f.fileno())
        # Out of the page cache, where this process's group holds it: the reader's faults
        # bring it back charged to its own group.
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    proc = _start(group, READER, str(big))
    try:
        deadline = time.monotonic() + 20
        while (group.usage_bytes() or 0) < 60 << 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group.pressing_limit(0.5)
        # Its page cache charged at the limit, page after page: pages are taken back to make
        # room again and again.
        assert group.at_limit(0.5)
    finally:
        proc.kill()
        proc.wait()


def test_a_group_sleeping_near_its_limit_does_not(group: Cgroup):
    proc = _start(group, SLEEPER, str(48 << 20))
    try:
        assert (group.usage_bytes() or 0) >= 48 << 20
        assert not group.pressing_limit(0.5)
        assert not group.at_limit(0.5)
    finally:
        proc.kill()
        proc.wait()


def test_a_time_out_at_the_memory_limit_is_mle(double_quick, monkeypatch):
    """Through the real sandbox: the judge asks the cgroup at the kill, and says MLE."""
    asked: list[bool] = []

    def pressing(self: Cgroup, window_s: float = 0.5) -> bool:
        asked.append(True)
        return True

    monkeypatch.setattr(Cgroup, "pressing_limit", pressing)
    sandbox = BwrapSandbox(BwrapConfig(fork_server=False))
    try:
        res = judge(double_quick, "def double(x):\n    import time\n    time.sleep(1000)\n",
                    sandbox)
    finally:
        sandbox.close()
    if not CgroupManager().available:
        pytest.skip("no memory cgroup to ask")
    assert asked
    assert res.verdict is Verdict.MLE, res.to_dict()
    assert res.runs == 1  # not a time-out, so no second run
    assert "reached" in (res.tests[0].message or "")


@pytest.mark.parametrize("body, want", [
    # Ended by the wall guard (it uses no CPU), still meeting its limit: stalled there.
    ("    import time\n    time.sleep(1000)\n", Verdict.MLE),
    # Ended by its CPU limit: computing, whatever its memory does meanwhile.
    ("    while True:\n        pass\n", Verdict.TLE),
], ids=["wall-guard", "cpu"])
def test_a_run_the_wall_guard_ends_at_its_memory_limit_is_mle(double_quick, monkeypatch, body,
                                                              want):
    monkeypatch.setattr(Cgroup, "pressing_limit", lambda self, window_s=0.5: False)
    monkeypatch.setattr(Cgroup, "at_limit", lambda self, window_s=0.3: True)
    sandbox = BwrapSandbox(BwrapConfig(fork_server=False))
    try:
        res = judge(double_quick, "def double(x):\n" + body, sandbox, samples_only=True,
                    probes=False)
    finally:
        sandbox.close()
    if not CgroupManager().available:
        pytest.skip("no memory cgroup to ask")
    assert res.verdict is want, res.to_dict()
    assert res.tests[0].limit == ("memory" if want is Verdict.MLE else "cpu"), res.to_dict()
