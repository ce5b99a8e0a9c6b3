"""Verdicts that load cannot move: with a busy process on every core, each JAX problem's jitted
solution is still accepted, and the submissions that overrun a limit meet the same limit as on
a quiet machine (an infinite loop its CPU time, a sleeping one the wall-clock guard, memory
exhaustion by allocation or by deep recursion its memory limit). Real sandbox, sample tests;
the jitted solutions' sandboxes are prepared before the load starts (preparing them is not
what is judged)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from judge import pysource
from judge.engine import judge
from judge.kinds import job_for
from judge.package import Package, load_package
from judge.sandbox import BwrapConfig, BwrapSandbox, xla_cache
from judge.sandbox.bwrap.spawned import Spawned
from judge.sandbox.pool import SandboxPool
from judge.verdicts import Verdict
from tests.conftest import REPO

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

SPIN = "while True:\n    pass\n"


PER_CALL = ("decoder-block-preln",
            "problems/decoder-block-preln/submissions/accepted/jit_per_call.py")


def _charges(res) -> tuple[float, float]:  # noqa: ANN001 - a JudgeResult
    """CPU charged to the tests (less compilation) and compilation charged to the budget."""
    cpu = compiled = 0.0
    for t in res.tests:
        c = min(t.compile_ms or 0.0, t.cpu_ms or 0.0)
        cpu, compiled = cpu + (t.cpu_ms or 0.0) - c, compiled + c
    return cpu, compiled


def test_compilation_is_charged_the_same_alone_and_under_load(sandbox: BwrapSandbox):
    """A submission that jits `init` and `apply` anew in every call: alone, then with a busy
    process on every core, accepted both times and charged about the same compilation; the
    part of each test that is not compilation stays charged to the test (on the wall clock,
    a compilation stretched by the load swallowed the test's whole CPU time). First in the
    module: its `busy` fixture is not running yet."""
    if not _has_cpu_clock(sandbox):
        pytest.skip("no CPU clock here")
    package, code = _package(PER_CALL[0]), _solution(PER_CALL[1])
    alone = judge(package, code, sandbox, samples_only=True, probes=False, split=False)
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(os.cpu_count() or 1)]
    try:
        loaded = judge(package, code, sandbox, samples_only=True, probes=False, split=False)
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()
    assert alone.verdict is Verdict.AC and loaded.verdict is Verdict.AC, loaded.to_dict()
    (cpu_a, compile_a), (cpu_l, compile_l) = _charges(alone), _charges(loaded)
    assert compile_a > 0 and 0.7 * compile_a < compile_l < 1.4 * compile_a, (compile_a,
                                                                              compile_l)
    assert cpu_l > 0.5 * cpu_a, (cpu_a, cpu_l)


ACCEPTED = [
    ("decoder-block", "problems/decoder-block/submissions/accepted/jax_jit.py"),
    ("encoder-decoder", "problems/encoder-decoder/submissions/accepted/jax_jit.py"),
    # Flax, init and apply under jax.jit: the solution load made time out on the wall clock.
    ("decoder-block-preln", "problems/decoder-block-preln/submissions/accepted/jit_per_shape.py"),
    ("encoder-block", "problems/encoder-block/submissions/accepted/jit_per_shape.py"),
    PER_CALL,
]


@pytest.fixture(scope="module")
def prepared_pool() -> Iterator[SandboxPool]:
    """A sandbox prepared for each accepted solution, on the machine as it is."""
    cache = xla_cache.ensure_dir(xla_cache.default_root())
    p = SandboxPool(BwrapSandbox(BwrapConfig(xla_cache_dir=cache)), per_key=1,
                    max_idle=len(ACCEPTED), max_idle_bytes=16 << 30, split_idle=False)
    try:
        kinds = set()
        for slug, path in ACCEPTED:
            package, code = _package(slug), _solution(path)
            job = p.route(job_for(package, code, pysource.parse(code, filename="solution.py")))
            p.prewarm(job.kind, package.manifest.limits.memory_mb << 20)
            kinds.add(job.kind.key)
        deadline = time.monotonic() + 300
        while not kinds <= {sp.kind.key for sp in p.idle() if isinstance(sp, Spawned)}:
            assert time.monotonic() < deadline, "the sandboxes were not prepared in time"
            time.sleep(0.2)
        yield p
    finally:
        p.close()


@pytest.fixture(scope="module")
def busy(prepared_pool: SandboxPool) -> Iterator[int]:
    """One spinning process per core, at the judge's own priority, for the module's tests."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(os.cpu_count() or 1)]
    try:
        yield len(procs)
        # The load was there all along.
        assert all(p.poll() is None for p in procs)
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()


def _package(slug: str) -> Package:
    return load_package(REPO / "problems" / slug)


def _solution(path: str) -> str:
    return (REPO / path).read_text()


@pytest.mark.parametrize("slug, path", ACCEPTED)
def test_jitted_solutions_are_accepted_under_load(prepared_pool: SandboxPool, busy, slug, path):
    res = judge(_package(slug), _solution(path), prepared_pool, samples_only=True, probes=False)
    assert res.verdict is Verdict.AC, res.to_dict()
    assert res.runs == 1
    sandbox = prepared_pool.backend
    assert isinstance(sandbox, BwrapSandbox)
    if _has_cpu_clock(sandbox):
        # Measured on the sandbox's CPU clock, with compilation reported apart.
        cpu = [t.cpu_ms for t in res.tests]
        assert all(c is not None for c in cpu) and sum(c or 0.0 for c in cpu) > 0, res.to_dict()
        assert any((t.compile_ms or 0) > 0 for t in res.tests), res.to_dict()


def _has_cpu_clock(sandbox: BwrapSandbox) -> bool:
    return sandbox.cgroups is not None and sandbox.cgroups.available


def test_an_infinite_loop_meets_its_cpu_limit(busy, sandbox: BwrapSandbox,
                                              double_quick: Package):
    res = judge(double_quick, "def double(x):\n    while True:\n        pass\n", sandbox,
                samples_only=True, probes=False)
    assert res.verdict is Verdict.TLE and res.runs == 2, res.to_dict()
    test = res.tests[0]
    if _has_cpu_clock(sandbox):
        assert test.limit == "cpu" and "CPU time limit" in (test.message or ""), res.to_dict()
        assert test.cpu_ms is not None and test.cpu_ms >= double_quick.manifest.limits.time_ms


def test_a_sleeping_submission_meets_the_wall_guard(busy, sandbox: BwrapSandbox,
                                                    double_quick: Package):
    res = judge(double_quick, "import time\ndef double(x):\n    time.sleep(1000)\n", sandbox,
                samples_only=True, probes=False)
    assert res.verdict is Verdict.TLE and res.runs == 2, res.to_dict()
    test = res.tests[0]
    if _has_cpu_clock(sandbox):
        assert test.limit == "wall_guard" and "guard" in (test.message or ""), res.to_dict()
        assert test.cpu_ms is not None and test.cpu_ms < double_quick.manifest.limits.time_ms


@pytest.mark.parametrize("code", [
    # Touched pages past the limit: the OOM killer.
    "import numpy as np\ndef double(x):\n    a = np.ones(2 << 30 >> 3)\n    return a[: x.size]\n",
    # Larger than the machine: the allocation itself fails (MemoryError).
    "import numpy as np\ndef double(x):\n    a = np.ones(40 << 30 >> 3)\n    return a[: x.size]\n",
], ids=["oom", "memory-error"])
def test_allocation_past_the_limit_is_mle(busy, sandbox: BwrapSandbox, double: Package, code):
    res = judge(double, code, sandbox, samples_only=True, probes=False)
    assert res.verdict is Verdict.MLE, res.to_dict()
    assert res.tests[0].limit == "memory" and res.runs == 1, res.to_dict()


RECURSION = """import sys
import flax.linen as nn
sys.setrecursionlimit(10**7)


def deeper(n):
    return deeper(n + 1) + 1


def encoder_block_forward(seed, x, num_heads, d_ff):
    return deeper(0)
"""


def test_deep_recursion_is_mle(busy, sandbox: BwrapSandbox):
    """Frames fill the memory (the limit raised to 10^7): MLE every time, never a time-out,
    in a sandbox with JAX and Flax loaded (their pages are what a group at its limit evicts
    and reads back)."""
    res = judge(_package("encoder-block"), RECURSION, sandbox, samples_only=True, probes=False)
    assert res.verdict is Verdict.MLE, res.to_dict()
    assert res.tests[0].limit == "memory", res.to_dict()
