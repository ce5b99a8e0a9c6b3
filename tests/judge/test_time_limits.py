"""The time limits of a run: the sandbox's CPU clock (a real cgroup), the phase limits on it
with their wall-clock guard (on given clocks), and how a test's time is charged once its
frames say how much of it was JAX compilation."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from judge.interpret import charge_time
from judge.sandbox.bwrap.cgroups import Cgroup, CgroupManager
from judge.sandbox.io_loop import RunPlan
from judge.sandbox.time_limits import PhaseLimits, compile_s, group_computing
from judge.verdicts import TestResult, Verdict


@pytest.fixture
def group() -> Iterator[Cgroup]:
    manager = CgroupManager()
    if not manager.available:
        pytest.skip("no cgroups here")
    g = manager.create(256 << 20, 64)
    yield g
    g.remove()


def _in_group(group: Cgroup, body: str) -> subprocess.Popen:
    joins = "".join(f"open({str(p)!r}, 'w').write(str(os.getpid()))\n"
                    for p in group.procs_files)
    return subprocess.Popen([sys.executable, "-c", "import os, time\n" + joins
                             + "print('in', flush=True)\n" + body],
                            stdout=subprocess.PIPE, text=True)


@pytest.mark.sandbox
def test_a_groups_cpu_clock_counts_what_runs_in_it(group: Cgroup):
    assert group.cpu_seconds() is not None, "cgroups without a CPU clock"
    before = group.cpu_seconds() or 0.0
    proc = _in_group(group, "end = time.process_time() + 0.3\n"
                     "while time.process_time() < end:\n    pass\n")
    assert proc.wait(120) == 0
    # What the process spent (its interpreter's start-up included), and no less.
    assert (group.cpu_seconds() or 0.0) - before >= 0.3


@pytest.mark.sandbox
@pytest.mark.parametrize("body, computes", [("while True:\n    pass\n", True),
                                            ("time.sleep(1000)\n", False)],
                         ids=["spinning", "sleeping"])
def test_a_group_computes_while_a_thread_runs(group: Cgroup, body: str, computes: bool):
    assert group.cpuacct_dir is not None
    proc = _in_group(group, body)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "in"
        time.sleep(0.1)
        seen = [group_computing(group.cpuacct_dir) for _ in range(5)]
        assert any(seen) if computes else not any(seen)
    finally:
        proc.kill()
        proc.wait()


class Clock:
    """A CPU clock the test moves by hand."""

    def __init__(self, start: float = 0.0):
        self.s: float | None = start

    def __call__(self) -> float | None:
        return self.s


def limits(clock: Clock | None, job_cpu_s: float = 100.0) -> PhaseLimits:
    return PhaseLimits(clock, 0.0, startup_timeout_s=30.0, wall_guard=4.0,
                       job_cpu_s=job_cpu_s, compile_budget_s=10.0)


def test_a_phase_ends_on_its_cpu_time_whatever_the_wall_clock_says():
    clock = Clock(start=50.0)  # a pooled sandbox's preparation: not the job's
    lim = limits(clock)
    lim.start_job(0.0)
    lim.enter("test", 0.0, allow_s=1.0)
    clock.s = 50.9
    assert lim.over(3.0) is None  # a loaded host: 3 s of wall for 0.9 s of CPU
    clock.s = 51.05
    assert lim.over(3.1) == "cpu"


def test_the_wall_guard_grows_with_the_cpu_used_and_catches_a_sleeper():
    clock = Clock()
    lim = limits(clock)
    lim.start_job(0.0)
    lim.enter("test", 0.0, allow_s=2.0, base_s=1.0)
    assert lim.over(3.9) is None
    assert lim.over(4.1) == "wall_guard"  # slept: 4 times the limit of 1 s
    clock.s = 1.8  # computing, with grace for compilation: the guard is 4 x 1.8 s
    assert lim.over(7.0) is None
    assert lim.over(7.3) == "wall_guard"


def test_the_wall_guard_waits_while_the_host_starves_a_computing_sandbox():
    clock, computing = Clock(), [True]
    lim = PhaseLimits(clock, 0.0, startup_timeout_s=30.0, wall_guard=4.0, job_cpu_s=20.0,
                      compile_budget_s=10.0, computing=lambda: computing[0])
    lim.start_job(0.0)
    lim.enter("test", 0.0, allow_s=1.0)
    assert lim.over(5.0) is None  # runnable, 0 s of CPU in 5 s: the host's doing
    computing[0] = False
    assert lim.over(5.3) == "wall_guard"  # now it waits for something else
    computing[0] = True
    assert lim.over(4.0 * 10.0 + 1) == "wall_guard"  # the job's own guard does not wait


def test_a_test_that_starts_compiling_gets_more_cpu_live():
    clock = Clock()
    lim = limits(clock)
    lim.start_job(0.0)
    lim.enter("test", 0.0, allow_s=1.0)
    clock.s = 1.5
    assert lim.over(2.0) == "cpu"
    lim.extend(1.0)  # the runner's `compiling` frame
    assert lim.over(2.0) is None
    clock.s = 2.1
    assert lim.over(2.5) == "cpu"


def test_the_whole_job_has_a_limit_however_the_phases_are_reset():
    clock = Clock()
    lim = limits(clock, job_cpu_s=3.0)
    lim.start_job(0.0)
    for i in range(5):  # frames that begin a test again and again, each within its limit
        lim.enter("test", float(i), allow_s=1.0)
        clock.s = 0.9 * (i + 1)
        hit = lim.over(float(i) + 0.5)
        if clock.s > 3.0:
            assert hit == "cpu"
            break
        assert hit is None
    else:
        pytest.fail("the job's limit never came")


def test_without_a_cpu_clock_the_limits_are_on_the_wall_clock():
    lim = limits(None)
    lim.start_job(0.0)
    lim.enter("test", 0.0, allow_s=1.0)
    assert lim.cpu() is None
    assert lim.over(0.9) is None and lim.over(1.1) == "wall"
    gone = Clock()
    lim = limits(gone)
    lim.start_job(0.0)
    lim.enter("test", 0.0, allow_s=1.0)
    gone.s = None  # the group went away: the wall clock still ends the phase
    assert lim.over(1.1) == "wall"


def test_a_compile_claim_counts_for_no_more_than_the_tests_cpu():
    assert compile_s({"compile_ms": 3000.0}, 1200.0) == pytest.approx(1.2)
    assert compile_s({"compile_ms": 500.0}, None) == pytest.approx(0.5)
    for forged in (-5, float("nan"), "lots", None):
        assert compile_s({"compile_ms": forged}, 100.0) == 0.0


def plan(**kw) -> RunPlan:
    return RunPlan(time_ms=1000, memory_bytes=1 << 28, output_cap=1024, ole_limit=4096,
                   expected_sizes=[1, 1, 1], compile_budget_ms=kw.pop("budget", 2500),
                   compiles=kw.pop("compiles", True))


def test_compilation_is_charged_to_the_budget_not_the_test():
    tests = [TestResult("a", Verdict.AC, cpu_ms=1800.0, compile_ms=1200.0),
             TestResult("b", Verdict.WA, cpu_ms=1500.0, compile_ms=200.0),
             TestResult("c", Verdict.AC, cpu_ms=900.0, compile_ms=None)]
    charge_time(tests, plan())
    assert tests[0].verdict is Verdict.AC and tests[0].limit is None
    assert tests[1].verdict is Verdict.TLE and tests[1].limit == "cpu"
    assert "1.50 s of CPU" in (tests[1].message or "")
    assert tests[2].verdict is Verdict.AC


def test_compilation_past_the_budget_is_tle_once():
    tests = [TestResult(n, Verdict.AC, cpu_ms=1500.0, compile_ms=1400.0) for n in "abc"]
    charge_time(tests, plan())
    assert [t.verdict for t in tests] == [Verdict.AC, Verdict.TLE, Verdict.AC]
    assert tests[1].limit == "compile_budget" and "2.5 s" in (tests[1].message or "")


def test_the_live_grace_is_for_jax_jobs_and_bounded_by_the_budget():
    assert plan(compiles=False).compile_grace_s(0.0) == 0.0
    assert plan().compile_grace_s(0.0) == pytest.approx(1.0)
    assert plan().compile_grace_s(2.0) == pytest.approx(0.5)
    assert plan().compile_grace_s(9.0) == 0.0


def test_the_rlimit_backstop_stays_past_the_jobs_own_limits():
    p = plan()
    assert p.cpu_seconds > p.job_cpu_s


# --- compilation on the CPU clock (judge/inside/runner_jax.py CompileClock) -------------------

LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE = "/jax/core/compile/backend_compile_duration"


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_compilation_is_timed_on_the_cpu_clock_not_the_wall():
    """A compilation the host stalls (wall time passing, no CPU used) is charged nothing for
    the stall; the CPU it uses is charged whatever its wall duration says."""
    from judge.inside.runner_jax import CompileClock

    clock = CompileClock()
    clock.started(COMPILE, time.time())
    time.sleep(0.3)  # a busy host: the compilation waits for a core
    clock(COMPILE, 0.3)
    assert clock.ms < 50, clock.ms
    clock.started(LOWER, time.time())
    _spin(0.2)
    clock(LOWER, 0.9)  # the wall duration a stretched clock would report
    assert 150 < clock.ms < 300, clock.ms
    clock("/jax/some/other_event", 5.0)  # not a compilation
    assert clock.ms < 300


def test_the_compile_clock_hears_jaxs_own_events():
    """The events and their starts are the ones the pinned JAX reports around a compilation."""
    script = (
        "import jax, jax.numpy as jnp, time\n"
        "from judge.inside.runner_jax import CompileClock\n"
        "clock = CompileClock(); clock.listen(jax.monitoring)\n"
        "lowered = []\n"
        "clock.on_lowered = lambda: lowered.append(1)\n"
        "jax.jit(lambda x: jnp.sin(x) @ x.T)(jnp.ones((64, 64))).block_until_ready()\n"
        "assert clock._started == {}, clock._started\n"
        "print(clock.ms, len(lowered))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120)
    ms, lowered = out.stdout.split()
    assert float(ms) > 0 and int(lowered) >= 1, out.stdout
