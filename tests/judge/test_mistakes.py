"""Known mistakes: the package format of their words, and the matching rules."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from judge.diagnosis.mistakes import Observed, distance, name_mistakes, wrong
from judge.package import Mistake, PackageError, Tolerance, load_package
from judge.trusted.known_mistakes import KnownMistake
from tests.conftest import FIXTURES

TOL = Tolerance(atol=1e-4, rtol=1e-4)
MISTAKES = "submissions/wrong_answer/mistakes.toml"


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "double"
    shutil.copytree(FIXTURES / "double", dst)
    return dst


def _defects(pkg: Path) -> list[str]:
    with pytest.raises(PackageError) as err:
        load_package(pkg)
    return [str(d) for d in err.value.defects]


# --- the package format ----------------------------------------------------------------------


def test_the_fixture_bank_loads():
    p = load_package(FIXTURES / "double")
    assert p.mistakes["add_one.py"].title == "Adds one instead of doubling"


def test_a_wrong_answer_without_a_title_is_a_package_error(tmp_path):
    pkg = _copy(tmp_path)
    (pkg / MISTAKES).write_text('["add_one.py"]\ndetail = "d"\nstatement = "s"\n')
    whys = _defects(pkg)
    assert any(w.startswith(f"{MISTAKES}: add_one.py.title") for w in whys), whys


def test_a_wrong_answer_without_an_entry_is_a_package_error(tmp_path):
    pkg = _copy(tmp_path)
    (pkg / "submissions/wrong_answer/times_three.py").write_text(
        "# triples\ndef double(x):\n    return 3 * x\n")
    whys = _defects(pkg)
    assert any("times_three.py" in w and "no entry" in w for w in whys), whys


def test_a_missing_mistakes_file_is_a_package_error(tmp_path):
    pkg = _copy(tmp_path)
    (pkg / MISTAKES).unlink()
    whys = _defects(pkg)
    assert any(w.startswith(MISTAKES) and "missing" in w for w in whys), whys


def test_entries_name_real_files_and_titles_are_unique_single_lines(tmp_path):
    pkg = _copy(tmp_path)
    (pkg / "submissions/wrong_answer/plus_two.py").write_text(
        "# adds two\ndef double(x):\n    return x + 2\n")
    (pkg / MISTAKES).write_text(
        '["add_one.py"]\ntitle = "Adds"\ndetail = "d"\nstatement = "s"\n'
        '["plus_two.py"]\ntitle = "Adds"\ndetail = "d"\nstatement = "s"\n'
        '["gone.py"]\ntitle = "Gone"\ndetail = "d"\nstatement = "s"\n')
    whys = _defects(pkg)
    assert any("gone.py" in w and "no such file" in w for w in whys), whys
    assert any("'Adds' is used twice" in w for w in whys), whys
    (pkg / MISTAKES).write_text(
        '["add_one.py"]\ntitle = "two\\nlines"\ndetail = "d"\nstatement = "s"\nextra = 1\n'
        '["plus_two.py"]\ntitle = "Adds two"\ndetail = ""\nstatement = "s"\n')
    whys = _defects(pkg)
    assert any("add_one.py.title" in w and "one line" in w for w in whys), whys
    assert any("add_one.py.extra" in w for w in whys), whys
    assert any("plus_two.py.detail" in w for w in whys), whys


def test_broken_toml_is_a_package_error(tmp_path):
    pkg = _copy(tmp_path)
    (pkg / MISTAKES).write_text("[unclosed\n")
    assert any("not valid TOML" in w for w in _defects(pkg))


def test_the_bank_is_part_of_the_problem_version(tmp_path):
    pkg = _copy(tmp_path)
    before = load_package(pkg).content_hash
    text = (pkg / MISTAKES).read_text().replace("Adds one", "Adds 1")
    (pkg / MISTAKES).write_text(text)
    assert load_package(pkg).content_hash != before


# --- matching --------------------------------------------------------------------------------

M = Mistake(title="Off by one", detail="Add nothing.", statement="The first line.")
WANT = [np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0]), np.array([6.0])]


def _bank(*outputs: np.ndarray | None, mistake: Mistake = M) -> KnownMistake:
    return KnownMistake("off_by_one.py", mistake, list(outputs))


def _observed(*outputs: np.ndarray | None, failed: tuple[bool, ...]) -> list[Observed]:
    return [Observed(f"t{i}", f, o, w)
            for i, (o, f, w) in enumerate(zip(outputs, failed, WANT, strict=True))]


def test_a_mistake_matching_every_failed_test_is_named_with_its_tests():
    m = _bank(WANT[0] + 1, WANT[1] + 1, WANT[2] + 1)
    obs = _observed(WANT[0] + 1 + 1e-6, WANT[1] + 1, WANT[2] + 1, failed=(True, True, True))
    [f] = name_mistakes([m], obs, TOL)
    assert f.kind == "known-mistake" and f.title == "Off by one"
    assert f.tests == ["t0", "t1", "t2"] and "Add nothing." in f.detail
    assert "The first line." in f.detail


def test_one_failed_test_that_does_not_match_means_no_name():
    m = _bank(WANT[0] + 1, WANT[1] + 1, WANT[2] + 1)
    obs = _observed(WANT[0] + 1, WANT[1] + 1, WANT[2] + 7, failed=(True, True, True))
    assert name_mistakes([m], obs, TOL) == []


def test_a_failed_test_without_an_output_means_no_name():
    m = _bank(WANT[0] + 1, WANT[1] + 1, WANT[2] + 1)
    obs = _observed(WANT[0] + 1, WANT[1] + 1, None, failed=(True, True, True))
    assert name_mistakes([m], obs, TOL) == []


def test_the_mistake_must_differ_from_the_reference_where_the_submission_failed():
    # The mistake is right on t2, yet the submission failed t2: something else is wrong.
    m = _bank(WANT[0] + 1, WANT[1] + 1, WANT[2])
    obs = _observed(WANT[0] + 1, WANT[1] + 1, WANT[2] + 5, failed=(True, True, True))
    assert name_mistakes([m], obs, TOL) == []
    # Even when the submission's output equals the mistake's there (it failed on the figures
    # of another reading, say a size): equal to the reference is no mistake.
    obs = _observed(WANT[0] + 1, WANT[1] + 1, WANT[2], failed=(True, True, True))
    assert name_mistakes([m], obs, TOL) == []


def test_a_mistake_wrong_where_the_submission_passed_is_not_named():
    m = _bank(WANT[0] + 1, WANT[1] + 1, WANT[2] + 1)
    obs = _observed(WANT[0] + 1, WANT[1] + 1, WANT[2], failed=(True, True, False))
    assert name_mistakes([m], obs, TOL) == []


def test_tests_the_mistake_is_not_known_on_and_tests_it_gets_right_are_skipped():
    m = _bank(WANT[0] + 1, None, WANT[2])
    obs = _observed(WANT[0] + 1, WANT[1] + 9, WANT[2], failed=(True, True, False))
    [f] = name_mistakes([m], obs, TOL)
    assert f.tests == ["t0"]
    # ... but a mistake known on no failed test explains nothing.
    m = _bank(None, None, WANT[2])
    assert name_mistakes([m], obs, TOL) == []


def test_closest_mistake_first():
    near = _bank(WANT[0] + 1, WANT[1] + 1, WANT[2] + 1,
                 mistake=Mistake(title="Near", detail="d", statement="s"))
    far = _bank(WANT[0] + 1 + 2e-4, WANT[1] + 1, WANT[2] + 1,
                mistake=Mistake(title="Far", detail="d", statement="s"))
    obs = _observed(WANT[0] + 1, WANT[1] + 1, WANT[2] + 1, failed=(True, True, True))
    assert [f.title for f in name_mistakes([far, near], obs, TOL)] == ["Near", "Far"]


def test_nan_and_overflow_must_sit_where_the_mistake_has_them():
    mo = np.array([np.nan, 2.0, np.inf])
    assert distance(np.array([np.nan, 2.0, np.inf]), mo, TOL) == 0.0
    assert distance(np.array([1.0, 2.0, np.inf]), mo, TOL) is None
    assert distance(np.array([np.nan, 2.0, -np.inf]), mo, TOL) is None
    assert distance(np.array([np.nan, 2.0]), mo, TOL) is None
    assert wrong(mo, np.array([1.0, 2.0, 3.0]), TOL)
    assert not wrong(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0 + 1e-5]), TOL)


def test_a_background_bank_is_the_same_bank_computed_at_low_priority(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys

    from judge.trusted import known_mistakes
    from judge.trusted.known_mistakes import bank

    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(tmp_path / "bg"))
    package = load_package(FIXTURES / "double")
    background = bank(package, package.tests, background=True)
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(tmp_path / "fg"))
    package = load_package(FIXTURES / "double")
    known_mistakes._BANKS.clear()
    foreground = bank(package, package.tests)
    assert [m.file for m in background] == [m.file for m in foreground] == ["add_one.py"]
    for a, b in zip(background[0].outputs, foreground[0].outputs, strict=True):
        assert a is not None and b is not None and np.array_equal(a, b)
    # What the trusted process does first when it runs in the background, in a session of
    # its own as run_trusted starts it: lower its niceness and its session's share.
    probe = ("import os; from judge.trusted.reference_run import _lower_priority; "
             "_lower_priority(); "
             "print(os.getpriority(os.PRIO_PROCESS, 0), open('/proc/self/autogroup').read())")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, start_new_session=True, cwd=FIXTURES.parents[2]).stdout
    assert out.split()[0] == str(min(19, os.getpriority(os.PRIO_PROCESS, 0) + 15)), out
    if os.path.exists("/proc/self/autogroup"):
        assert out.split()[-1] == "15", out
