"""Limits calibrated the problemtools way (judge/package/calibration.py, judge/calibrate.py):
a limit problem.toml leaves out is `multiple` times the slowest accepted submission's figure in
calibration.toml, never below the judge's default; a fixed one stays as the problem sets it;
validation refuses a calibration that no longer describes the accepted files and a limit that
leaves them too little room; `problems calibrate` measures and writes the file."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from judge.calibrate import ROOM, Spent, calibrate, limits_room, stale
from judge.package import Limits, load_package
from judge.package.calibration import (
    CALIBRATION_FILE,
    Calibration,
    Measured,
    read_calibration,
    resolve_limits,
    write_calibration,
)
from judge.package.manifest import DEFAULT_COMPILE_BUDGET_MS, DEFAULT_TIME_MS
from judge.verdicts import TestResult, Verdict
from tests.conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "problems" / "double"
SHA = "0" * 64


def _calibration(**figures: tuple[float, float]) -> Calibration:
    return Calibration(measured_on="2026-11-28", judge_version="test", sandbox="bwrap", runs=3,
                       submissions={label: Measured(sha256=SHA, test_ms=t, compile_ms=c)
                                    for label, (t, c) in figures.items()})


def test_an_open_limit_is_the_multiple_of_the_slowest_rounded_up():
    cal = _calibration(**{"accepted/a.py": (2100.0, 25_616.0), "accepted/b.py": (40.0, 0.0)})
    limits = resolve_limits(Limits(), cal)
    assert limits.compile_budget_ms.value == 77_000  # 3 x 25.6 s, to the second above
    assert "3 × 25.6 s" in limits.compile_budget_ms.basis
    assert "accepted/a.py" in limits.compile_budget_ms.basis
    assert limits.time_ms.value == 6300  # 3 x 2.1 s
    loose = resolve_limits(Limits(multiple=5.0), cal)
    assert loose.compile_budget_ms.value == 129_000


def test_never_below_the_default_and_fixed_where_the_problem_says():
    cal = _calibration(**{"accepted/a.py": (10.0, 7461.0)})
    limits = resolve_limits(Limits(), cal)
    assert limits.compile_budget_ms.value == DEFAULT_COMPILE_BUDGET_MS
    assert "least" in limits.compile_budget_ms.basis and "7.46 s" in limits.compile_budget_ms.basis
    assert limits.time_ms.value == DEFAULT_TIME_MS
    fixed = resolve_limits(Limits(time_ms=1500, compile_budget_ms=20_000), cal)
    assert (fixed.time_ms.value, fixed.compile_budget_ms.value) == (1500, 20_000)
    assert fixed.time_ms.basis == "fixed by the problem"
    uncalibrated = resolve_limits(Limits(), None)
    assert uncalibrated.compile_budget_ms.value == DEFAULT_COMPILE_BUDGET_MS
    assert "not calibrated" in uncalibrated.compile_budget_ms.basis


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "double"
    shutil.copytree(FIXTURE, root)
    return root


def test_the_file_round_trips_and_a_broken_one_is_a_package_defect(tmp_path: Path):
    root = _copy(tmp_path)
    cal = _calibration(**{"accepted/plain.py": (1.5, 0.0)})
    write_calibration(root, cal)
    assert read_calibration(root) == (cal, None)
    before = load_package(root).content_hash
    write_calibration(root, _calibration(**{"accepted/plain.py": (2.5, 0.0)}))
    assert load_package(root).content_hash != before  # it sets limits: it is content
    (root / CALIBRATION_FILE).write_text("runs = 'three'\n")
    from judge.package import PackageError

    with pytest.raises(PackageError, match=CALIBRATION_FILE):
        load_package(root)


def test_validation_refuses_a_calibration_of_other_files(tmp_path: Path):
    root = _copy(tmp_path)
    assert stale(load_package(root)) == []  # none at all: the defaults, nothing stale
    write_calibration(root, _calibration(**{"accepted/plain.py": (1.5, 0.0),
                                           "accepted/gone.py": (1.0, 0.0)}))
    why = stale(load_package(root))
    assert any("accepted/plain.py changed" in w for w in why), why
    assert any("accepted/gone.py is measured but not packaged" in w for w in why), why
    assert "problems calibrate" in why[-1]


def test_a_limit_must_leave_the_accepted_submissions_room(tmp_path: Path):
    root = _copy(tmp_path)
    package = load_package(root)  # time_ms fixed at 1500, the compile budget the default
    fine = {"accepted/plain.py": Spent(test_ms=100.0, compile_ms=1000.0)}
    assert limits_room(package, fine) == []
    tight = {"accepted/plain.py": Spent(test_ms=600.0, compile_ms=1000.0)}
    (why,) = limits_room(package, tight)
    assert "time_ms = 1500 (fixed)" in why and "3 ×" in why
    greedy = {"accepted/plain.py": Spent(test_ms=10.0, compile_ms=45_000.0)}
    (why,) = limits_room(package, greedy)
    assert f"{ROOM:g} ×" in why and "compile_budget_ms" in why


def test_what_a_judgement_was_charged():
    tests = [TestResult("a", Verdict.AC, time_ms=900, compile_ms=800, cpu_ms=1000),
             TestResult("b", Verdict.AC, time_ms=50, compile_ms=0, cpu_ms=300),
             TestResult("c", Verdict.AC, time_ms=40, compile_ms=900, cpu_ms=500)]
    from judge.verdicts import aggregate

    spent = Spent.of(aggregate(tests))
    assert spent == Spent(test_ms=300.0, compile_ms=1300.0)  # a claim counts up to the CPU


@pytest.mark.sandbox
def test_calibrate_measures_the_accepted_submissions_and_writes_the_file(tmp_path: Path,
                                                                         sandbox):
    root = _copy(tmp_path)
    text = (root / "problem.toml").read_text()
    (root / "problem.toml").write_text(re.sub(r"^time_ms = \d+\n", "", text, flags=re.M))
    package = load_package(root)
    seen: list[str] = []
    cal = calibrate(package, sandbox, runs=2, progress=lambda label, s: seen.append(label))
    assert seen == ["accepted/plain.py"] and cal.runs == 2
    assert read_calibration(root)[0] == cal
    again = load_package(root)
    assert stale(again) == []
    assert again.limits.time_ms.value == DEFAULT_TIME_MS  # the default: plain.py takes ms
    assert "accepted/plain.py" in again.limits.time_ms.basis
