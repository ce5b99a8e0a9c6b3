"""The trusted check: one flat float64 output against the reference, outside the sandbox.

`|got - want| <= atol + rtol * |want|` elementwise (NumPy `allclose`, `equal_nan=False`),
plus the figures and a plain-words diagnosis of how a wrong answer is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judge.package import Tolerance
from judge.verdicts import TestResult, Verdict

GRID_MAX = 48  # rows/columns kept of the error picture


def compare(
    name: str,
    got: np.ndarray,
    want: np.ndarray,
    shape: tuple[int, ...],
    tol: Tolerance,
    time_ms: float | None,
) -> TestResult:
    want = np.asarray(want, dtype=np.float64).reshape(-1)
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    if got.size != want.size:
        return TestResult(
            name, Verdict.WA, time_ms=time_ms, shape=list(shape),
            message=f"the output has {got.size} elements, the expected output has {want.size}",
        )
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(got - want)
        bound = tol.atol + tol.rtol * np.abs(want)
        ok = diff <= bound  # NaN compares False: a NaN never passes
        bad = ~ok
        mismatches = int(bad.sum())
        finite_diff = np.where(np.isfinite(diff), diff, np.inf)
        rel = finite_diff / np.maximum(np.abs(want), np.finfo(np.float64).tiny)
    worst = int(np.argmax(finite_diff)) if mismatches == 0 else int(np.argmax(
        np.where(bad, finite_diff, -1.0)))
    max_abs = float(np.max(finite_diff)) if finite_diff.size else 0.0
    max_rel = float(np.max(rel)) if rel.size else 0.0
    unravelled = [int(i) for i in np.unravel_index(worst, shape)] if want.size else []
    result = TestResult(
        name,
        Verdict.AC if mismatches == 0 else Verdict.WA,
        time_ms=time_ms,
        max_abs_err=_num(max_abs),
        max_rel_err=_num(max_rel),
        mismatches=mismatches,
        worst_index=unravelled,
        got=_num(float(got[worst])) if got.size else None,
        want=_num(float(want[worst])) if want.size else None,
        shape=list(shape),
    )
    if mismatches:
        result.message = diagnose(got, want, shape, tol, mismatches, worst)
        result.error_grid = error_grid(diff, shape)
    return result


def _num(x: float) -> float | None:
    """JSON has no NaN or infinity; report those as None (the message says which)."""
    return x if np.isfinite(x) else None


def _fmt_index(idx: tuple[int, ...] | list[int]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]"


@dataclass(frozen=True)
class Hint:
    """One reading of how a wrong output is wrong. `key` names the kind (judge/diagnosis/diagnose.py
    turns the kinds that say what to change into findings); `text` is the sentence."""

    key: str  # non-finite | zeros | transposed | reordered | scaled | negated | positions
    text: str


def diagnose(
    got: np.ndarray,
    want: np.ndarray,
    shape: tuple[int, ...],
    tol: Tolerance,
    mismatches: int,
    worst: int,
) -> str:
    n = want.size
    where = _fmt_index([int(i) for i in np.unravel_index(worst, shape)])
    head = f"{mismatches} of {n} values differ; worst at {where}: got {got[worst]:.6g}, " \
        f"want {want[worst]:.6g} (allowed {tol.atol + tol.rtol * abs(want[worst]):.2g})."
    return " ".join([head, *(h.text for h in hints(got, want, shape, tol))])


def hints(got: np.ndarray, want: np.ndarray, shape: tuple[int, ...],
          tol: Tolerance) -> list[Hint]:
    """What the figures say about a wrong output of the right size."""
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    want = np.asarray(want, dtype=np.float64).reshape(-1)
    out: list[Hint] = []
    nan, inf = int(np.isnan(got).sum()), int(np.isinf(got).sum())
    if nan or inf:
        parts = [f"{nan} NaN"] if nan else []
        parts += [f"{inf} infinite"] if inf else []
        out.append(Hint(
            "non-finite",
            f"The output has {' and '.join(parts)} values where the reference is finite: an "
            "overflow (e.g. exp in a softmax without subtracting the maximum) or a division "
            "by zero."
        ))
    elif np.allclose(got, 0):
        out.append(Hint("zeros", "The output is all zeros."))
    else:
        out.extend(_shape_hints(got, want, shape, tol))
        out.extend(_scale_hints(got, want, tol))
        rows = _bad_rows(got, want, shape, tol)
        if rows:
            out.append(Hint("positions", rows))
    return out


def _shape_hints(got: np.ndarray, want: np.ndarray, shape: tuple[int, ...],
                 tol: Tolerance) -> list[Hint]:
    if len(shape) < 2:
        return []
    w = want.reshape(shape)
    axes = list(range(len(shape)))
    last2 = axes[:-2] + [axes[-1], axes[-2]]
    t = np.transpose(w, last2).reshape(-1)
    if np.allclose(got, t, atol=tol.atol, rtol=tol.rtol):
        return [Hint("transposed",
                     "The values match the expected output with its last two axes swapped: "
                     "the output is transposed before flattening.")]
    if np.allclose(np.sort(got), np.sort(want), atol=tol.atol, rtol=tol.rtol):
        return [Hint("reordered",
                     "The output holds the right values in the wrong order: check the order "
                     "of axes before flattening (e.g. heads merged in the wrong order).")]
    return []


def _scale_hints(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> list[Hint]:
    denom = float(np.dot(want, want))
    if denom == 0:
        return []
    k = float(np.dot(got, want)) / denom
    if abs(k - 1) > 1e-3 and np.allclose(got, k * want, atol=tol.atol, rtol=tol.rtol):
        return [Hint("scaled",
                     f"The output is the expected output times {k:.4g}: a scale factor is off.")]
    if np.allclose(-got, want, atol=tol.atol, rtol=tol.rtol):
        return [Hint("negated", "The output is the expected output with the sign flipped.")]
    return []


def _bad_rows(got: np.ndarray, want: np.ndarray, shape: tuple[int, ...], tol: Tolerance) -> str:
    """Which positions (all axes but the last) are wrong: e.g. only the first row right is
    the signature of a causal-mask mistake."""
    if len(shape) < 2:
        return ""
    g, w = got.reshape(shape), want.reshape(shape)
    ok = np.isclose(g, w, atol=tol.atol, rtol=tol.rtol).all(axis=-1).reshape(-1)
    if ok.all() or not ok.any():
        return ""
    wrong = np.flatnonzero(~ok)
    listed = ", ".join(
        _fmt_index([int(i) for i in np.unravel_index(int(r), shape[:-1])]) for r in wrong[:6]
    )
    more = f" and {len(wrong) - 6} more" if len(wrong) > 6 else ""
    return f"{int(ok.sum())} of {ok.size} positions are right; wrong: {listed}{more}."


def error_grid(diff: np.ndarray, shape: tuple[int, ...]) -> list[list[float]]:
    """|got - want| as rows = positions, columns = features, downsampled to GRID_MAX."""
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    grid = np.where(np.isfinite(diff), diff, np.nan).reshape(rows, -1)
    rs = max(1, -(-grid.shape[0] // GRID_MAX))
    cs = max(1, -(-grid.shape[1] // GRID_MAX))
    if rs > 1 or cs > 1:
        pad_r, pad_c = (-grid.shape[0]) % rs, (-grid.shape[1]) % cs
        padded = np.pad(grid, ((0, pad_r), (0, pad_c)), constant_values=0.0)
        grid = padded.reshape(padded.shape[0] // rs, rs, padded.shape[1] // cs, cs).max(axis=(1, 3))
    # NaN/inf cells become -1 so the picture can mark them; JSON has no NaN.
    return [[round(float(v), 7) if np.isfinite(v) else -1.0 for v in row] for row in grid]
