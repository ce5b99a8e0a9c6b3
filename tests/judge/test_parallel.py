"""One Submit in two prepared sandboxes at once: same verdicts, tests in order, only when idle."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest

from judge import wire
from judge.engine import judge
from judge.kinds import compiles_itself, kind_for, preload_for
from judge.parallel import _shifted, cut, idle_sandboxes, merge
from judge.sandbox import SandboxPool
from judge.sandbox.job import Job, Kind
from judge.verdicts import JudgeResult, TestResult, Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "problems"

CORRECT = "def double(x):\n    return (2 * x).reshape(-1)\n"
# Wrong on the shapes with 5 or more columns only: some tests of each part pass, some fail.
WRONG_WIDE = ("def double(x):\n    y = 2 * x\n    if x.shape[1] >= 5:\n        y = y + 1\n"
              "    return y.reshape(-1)\n")
# Slow on one late test only (a test of the second part), correct elsewhere.
SLOW_LATE = ("import time\ndef double(x):\n    if x.shape == (5, 7):\n        time.sleep(30)\n"
             "    return (2 * x).reshape(-1)\n")
PRINTS = "print('module')\ndef double(x):\n    print(x.shape)\n    return (2 * x).reshape(-1)\n"
# 40 KB per test: over the 256 KiB output limit only in total (each half stays under it).
FLOODS_IN_SUM = ("def double(x):\n    print('y' * 40000)\n    return (2 * x).reshape(-1)\n")


def test_cut_covers_every_test_once_in_order():
    for n in range(0, 20):
        for k in (1, 2, 3):
            ranges = cut(n, k)
            assert [i for a, b in ranges for i in range(a, b)] == list(range(n))
            sizes = [b - a for a, b in ranges]
            assert max(sizes) - min(sizes) <= 1


def test_merge_keeps_order_output_and_the_single_precedence():
    a = JudgeResult(Verdict.AC, [TestResult("t0", Verdict.AC), TestResult("t1", Verdict.AC)],
                    None, "a-out\n", "")
    b = JudgeResult(Verdict.TLE, [TestResult("t2", Verdict.TLE), TestResult("t3", None)],
                    "time limit", "b-out\n", "b-err")
    res = merge([a, b])
    assert [t.name for t in res.tests] == ["t0", "t1", "t2", "t3"]
    assert res.verdict is Verdict.TLE and res.message == "time limit"
    assert res.stdout == "a-out\nb-out\n" and res.stderr == "b-err"
    ce = JudgeResult(Verdict.CE, [TestResult("t2", None)], "bad", "", "")
    assert merge([a, ce]).verdict is Verdict.CE
    ie = JudgeResult(Verdict.IE, [TestResult("t2", None)], "judge fault", "", "")
    assert merge([ie, b]).verdict is Verdict.IE


def test_frames_of_a_later_part_report_their_place_in_the_whole():
    seen: list[int] = []
    forward = _shifted(lambda f: seen.append(f.header["test"]), 5)
    assert forward is not None
    forward(wire.Frame({"ev": "result", "test": 0}))
    forward(wire.Frame({"ev": "begin", "test": 2}))
    forward(wire.Frame({"ev": "ready"}))  # no test: not a test's progress
    assert seen == [5, 7]


@pytest.mark.parametrize(("code", "compiles"), [
    ("import jax\nf = jax.jit(lambda x: x)\n", True),
    ("from jax import jit\n@jit\ndef f(x):\n    return x\n", True),
    ("from jax import lax\ny = lax.scan(f, 0, xs)\n", True),
    ("import torch\nm = torch.compile(model)\n", True),
    ("import flax.linen as nn\nimport jax.numpy as jnp\ny = nn.Dense(4)\n", False),
    ("import numpy as np\ndef f(x):\n    return np.tanh(x)\n", False),
])
def test_only_submissions_that_do_not_compile_their_own_code_are_cut(code, compiles):
    assert compiles_itself(ast.parse(code)) is compiles
    job = Job(Kind(), code, "f", compiles_itself(ast.parse(code)))
    got = idle_sandboxes(IdlePool(), job, 8)  # type: ignore[arg-type]
    assert (got is None) is compiles
    assert idle_sandboxes(IdlePool(), job, 3) is None  # type: ignore[arg-type]  # too few tests


class IdlePool:
    """A pool that always has two prepared sandboxes idle."""

    def acquire_idle(self, kind: Kind, count: int) -> list:
        return ["a", "b"]


def test_eager_jax_is_cut_from_two_tests_others_from_six():
    flax = Kind(("flax.linen", "jax"))
    eager = Job(flax, "import flax.linen as nn\nm = nn.Dense(4)\n", "f")
    jitted = Job(flax, "import jax\nf = jax.jit(lambda x: x)\n", "f", compiles_itself=True)
    pool: SandboxPool = IdlePool()  # type: ignore[assignment]
    assert idle_sandboxes(pool, eager, 2) == ["a", "b"]  # a Run's samples
    assert idle_sandboxes(pool, eager, 1) is None
    assert idle_sandboxes(pool, jitted, 3) is None  # it would compile twice
    numpy = Job(Kind(), "import numpy as np\n", "f")
    assert idle_sandboxes(pool, numpy, 5) is None
    assert idle_sandboxes(pool, numpy, 6) is not None


def _ready_split(pool: SandboxPool) -> None:
    assert pool.wait_ready(2, 120)


@pytest.mark.sandbox
@pytest.mark.parametrize("code", [CORRECT, WRONG_WIDE, SLOW_LATE, PRINTS, FLOODS_IN_SUM,
                                  "def double(:\n",
                                  "raise ValueError('at import')\n"])
def test_split_gives_the_verdicts_of_one_sandbox(pool, sandbox, double_many, double_many_quick,
                                                 code):
    # A time-out costs its limit several times over, twice in each way: the slow code's
    # problem has a short one.
    package = double_many_quick if code is SLOW_LATE else double_many
    single = judge(package, code, sandbox)
    _ready_split(pool)
    before = pool.stats.split
    progress: list[int] = []
    split = judge(package, code, pool, on_test=lambda i, t: progress.append(i))
    if len(package.tests) >= 6 and single.verdict is not Verdict.CE:
        assert pool.stats.split == before + 1
    assert split.verdict is single.verdict, (split.to_dict(), single.to_dict())
    if code is SLOW_LATE:
        # One sandbox stops at the slow test; the other part's tests have their verdicts.
        slow = next(i for i, t in enumerate(split.tests) if t.verdict is Verdict.TLE)
        assert package.tests[slow].params == {"n": 5, "m": 7}
        assert all(t.verdict is Verdict.AC for t in split.tests[:4])
    elif code is FLOODS_IN_SUM:
        assert split.verdict is Verdict.OLE  # the limit holds for the parts' total
    else:
        assert [t.verdict for t in split.tests] == [t.verdict for t in single.tests]
        assert [t.name for t in split.tests] == [t.name for t in single.tests]
    if code is PRINTS:
        assert split.stdout.count("module") == 2  # each part runs the module once
    if split.verdict not in (Verdict.CE, Verdict.RE, Verdict.OLE):
        # Each test reported live once it ran (a test cut short by the clock has no frame;
        # a time-out's second run reports its tests again).
        judged = [i for i, t in enumerate(split.tests) if t.verdict not in (None, Verdict.TLE)]
        assert sorted(set(progress)) == judged


@pytest.mark.sandbox
def test_no_split_while_another_job_runs(pool, double_many):
    _ready_split(pool)
    kind = kind_for(double_many, preload_for(["numpy"]))
    started, release = threading.Event(), threading.Event()
    sleeper = ("import time\nfrom pathlib import Path\n"
               "def double(x):\n    time.sleep(1)\n    return (2 * x).reshape(-1)\n")

    def busy() -> None:
        started.set()
        judge(double_many, sleeper, pool, samples_only=True)
        release.set()

    t = threading.Thread(target=busy)
    t.start()
    started.wait()
    deadline = time.monotonic() + 30
    while pool._active == 0 and time.monotonic() < deadline:  # noqa: SLF001 - until it runs
        time.sleep(0.01)
    assert pool.acquire_idle(kind, 2) is None
    t.join()
    assert release.is_set()


@pytest.mark.sandbox
def test_spares_being_prepared_yield_the_cpu(pool, double_many):
    """Prepared at the lowest CPU weight, back to normal when their job comes."""
    _ready_split(pool)
    spare = pool.idle()[0]
    if spare.cgroup is None or spare.cgroup.cpu_dir is None:
        pytest.skip("no cpu cgroup controller on this host")
    name = "cpu.weight" if spare.cgroup.version == 2 else "cpu.shares"
    low = (spare.cgroup.cpu_dir / name).read_text().strip()
    spare.foreground()
    high = (spare.cgroup.cpu_dir / name).read_text().strip()
    assert int(low) < int(high)


@pytest.mark.sandbox
def test_light_jobs_run_ahead_of_framework_imports(sandbox):
    """A job of a kind that imports nothing ahead (NumPy) runs at a higher CPU weight than
    one whose sandbox imports a framework (the shortest job first); a spare being prepared
    stays below both until its job comes."""
    light = sandbox.spawn(Kind(), 256 << 20)
    heavy = sandbox.spawn(Kind(("numpy",)), 256 << 20)
    spare = sandbox.spawn(Kind(), 256 << 20, background=True)
    try:
        if light.cgroup is None or light.cgroup.cpu_dir is None:
            pytest.skip("no cpu cgroup controller on this host")
        name = "cpu.weight" if light.cgroup.version == 2 else "cpu.shares"

        def weight(sp) -> int:  # noqa: ANN001
            return int((sp.cgroup.cpu_dir / name).read_text())

        assert weight(spare) < weight(heavy) < weight(light)
        spare.foreground()
        assert weight(spare) == weight(light)
    finally:
        for sp in (light, heavy, spare):
            sp.destroy()
