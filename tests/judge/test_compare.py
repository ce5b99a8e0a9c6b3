"""The trusted comparison and its explanations."""

from __future__ import annotations

import numpy as np

from judge.compare import compare
from judge.package import Tolerance
from judge.verdicts import Verdict

TOL = Tolerance(atol=1e-4, rtol=1e-4)


def _want(shape=(3, 4)):
    return np.random.default_rng(0).standard_normal(shape)


def test_exact_and_within_tolerance_pass():
    w = _want()
    assert compare("t", w.reshape(-1), w, w.shape, TOL, 1.0).verdict is Verdict.AC
    nudged = w + 0.9 * (TOL.atol + TOL.rtol * np.abs(w))
    res = compare("t", nudged, w, w.shape, TOL, 1.0)
    assert res.verdict is Verdict.AC and res.mismatches == 0


def test_just_outside_tolerance_fails_with_figures():
    w = _want()
    got = w.copy().reshape(-1)
    got[5] += 1e-3
    res = compare("t", got, w, w.shape, TOL, 1.0)
    assert res.verdict is Verdict.WA
    assert res.mismatches == 1
    assert res.worst_index == [1, 1]
    assert abs(res.max_abs_err - 1e-3) < 1e-9
    assert "1 of 12 values differ; worst at [1, 1]" in res.message
    assert res.error_grid is not None and len(res.error_grid) == 3


def test_element_count_mismatch_names_both_counts():
    w = _want()
    res = compare("t", np.zeros(11), w, w.shape, TOL, 1.0)
    assert res.verdict is Verdict.WA
    assert "11" in res.message and "12" in res.message


def test_nan_and_inf_fail_and_are_explained():
    w = _want()
    got = w.copy().reshape(-1)
    got[0], got[1] = np.nan, np.inf
    res = compare("t", got, w, w.shape, TOL, 1.0)
    assert res.verdict is Verdict.WA and res.mismatches == 2
    assert "NaN" in res.message and "infinite" in res.message
    assert res.max_abs_err is None  # JSON-safe: no NaN or inf in figures


def test_transposed_output_is_diagnosed():
    w = _want((3, 4))
    res = compare("t", w.T.reshape(-1), w, w.shape, TOL, 1.0)
    assert res.verdict is Verdict.WA
    assert "transposed" in res.message


def test_scaled_output_is_diagnosed():
    w = _want()
    res = compare("t", 2 * w.reshape(-1), w, w.shape, TOL, 1.0)
    assert "times 2" in res.message


def test_wrong_rows_are_named():
    w = _want((4, 5))
    got = w.copy()
    got[1:] += 1.0
    res = compare("t", got.reshape(-1), w, w.shape, TOL, 1.0)
    assert "1 of 4 positions are right" in res.message


def test_error_grid_is_downsampled():
    w = _want((200, 100))
    res = compare("t", w.reshape(-1) + 1, w, w.shape, TOL, 1.0)
    assert len(res.error_grid) <= 48 and len(res.error_grid[0]) <= 48
