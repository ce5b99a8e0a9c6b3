"""Where a judgement's time went: every result records its parts, and they add up to its
total, on real judgements in the real sandbox."""

from __future__ import annotations

import pytest

from judge.engine import judge
from judge.timing import _test_times
from judge.verdicts import JudgeResult, TestResult, Timing, Verdict

AC = "def double(x):\n    return (2 * x).reshape(-1)\n"
WA = "def double(x):\n    return (2 * x + 1).reshape(-1)\n"
LOOPS = "def double(x):\n    while True:\n        pass\n"
PARTS = ("queue_ms", "preparation_ms", "tests_ms", "compile_ms", "diagnosis_ms", "rerun_ms",
         "other_ms")


def assert_adds_up(result: JudgeResult) -> dict[str, float]:
    assert result.timing is not None
    t = result.to_dict()["timing"]
    assert set(t) == {*PARTS, "total_ms"}
    assert t["queue_ms"] is None  # judged outside the queue
    assert all(t[k] >= 0 for k in PARTS if k != "queue_ms")
    # Rounded to 0.1 ms each: the parts meet the total within their rounding.
    assert abs(sum(t[k] or 0.0 for k in PARTS) - t["total_ms"]) <= 0.5
    # The same clock as "judged in" (absent where nothing ran), over the whole judgement.
    assert result.wall_ms is None or t["total_ms"] >= result.wall_ms - 0.1
    return t


@pytest.mark.sandbox
def test_an_accepted_judgement_records_its_parts(run):
    res = run(AC)
    assert res.verdict is Verdict.AC
    t = assert_adds_up(res)
    own = sum(x.time_ms or 0.0 for x in res.tests)
    compiled = sum(x.compile_ms or 0.0 for x in res.tests)
    assert t["tests_ms"] == pytest.approx(own - compiled, abs=0.2)
    assert t["compile_ms"] == pytest.approx(compiled, abs=0.2)
    # The sandbox started before the first test: its start-up is part of the preparation.
    assert res.startup_ms is not None and t["preparation_ms"] >= res.startup_ms
    assert t["diagnosis_ms"] == 0 and t["rerun_ms"] == 0


@pytest.mark.sandbox
def test_a_wrong_answer_counts_its_diagnosis(run):
    res = run(WA)
    assert res.verdict is Verdict.WA
    t = assert_adds_up(res)
    assert res.diagnosis_ms is not None
    assert t["diagnosis_ms"] == pytest.approx(res.diagnosis_ms, abs=0.2) and t["diagnosis_ms"] > 0


@pytest.mark.sandbox
def test_a_time_out_counts_its_first_run_as_a_rerun(sandbox, double_quick):
    res = judge(double_quick, LOOPS, sandbox, samples_only=True)
    assert res.verdict is Verdict.TLE and res.runs == 2
    t = assert_adds_up(res)
    # The first run met the limit too: at least the limit was spent on it, apart from the
    # run that counts (whose timed-out test is charged the limit).
    assert t["rerun_ms"] >= t["tests_ms"] > 0


@pytest.mark.sandbox
@pytest.mark.parametrize("code", ["def double(:\n", "raise ValueError('at import')\n"])
def test_a_judgement_without_tests_adds_up(run, code):
    res = run(code)
    assert res.verdict in (Verdict.CE, Verdict.RE)
    t = assert_adds_up(res)
    assert t["tests_ms"] == 0 and t["preparation_ms"] > 0
    # The module's error is explained after the verdict: in the diagnosis, not the preparation.
    assert t["diagnosis_ms"] == pytest.approx(res.diagnosis_ms or 0.0, abs=0.1)


@pytest.mark.sandbox
def test_tests_in_two_sandboxes_at_once_still_add_up(pool, double_many):  # noqa: F811
    sleeps = "import time\ndef double(x):\n    time.sleep(0.02)\n    return (2 * x).reshape(-1)\n"
    assert pool.wait_ready(2, 120)
    res = judge(double_many, sleeps, pool)
    assert res.verdict is Verdict.AC and res.parts == 2
    t = assert_adds_up(res)
    # The parts ran at once: the longer one's tests, not all of them, took the time.
    own = sum(x.time_ms or 0.0 for x in res.tests)
    assert 0 < t["tests_ms"] < own


def test_tests_cut_across_sandboxes_count_the_longer_part():
    tests = [TestResult(f"t{i}", Verdict.AC, time_ms=ms, compile_ms=c)
             for i, (ms, c) in enumerate([(10.0, 0.0), (30.0, 20.0), (5.0, None), (4.0, 1.0)])]
    one = JudgeResult(Verdict.AC, tests)
    assert _test_times(one) == (49.0 - 21.0, 21.0)
    two = JudgeResult(Verdict.AC, tests, parts=2)  # ran at once: t0-t1 beside t2-t3
    assert _test_times(two) == (20.0, 20.0)


def test_a_worker_adds_the_queue_and_its_own_work():
    judged = Timing(preparation_ms=100.0, tests_ms=20.0, other_ms=5.0, total_ms=125.0)
    t = judged.in_queue(40.0, 130.0)
    assert t.queue_ms == 40.0 and t.other_ms == 10.0 and t.total_ms == 170.0
    assert t.preparation_ms == 100.0 and t.tests_ms == 20.0
    # Clocks of two hosts may disagree: a wait is never negative.
    assert Timing().in_queue(-3.0, 7.0).to_dict() == {
        "queue_ms": 0.0, "preparation_ms": 0.0, "tests_ms": 0.0, "compile_ms": 0.0,
        "diagnosis_ms": 0.0, "rerun_ms": 0.0, "other_ms": 7.0, "total_ms": 7.0}
