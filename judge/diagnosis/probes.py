"""Property probes: relations a correct submission's outputs satisfy on inputs derived from a
test's, checked after a wrong answer without any expected output.

A package declares them (`[[probes]]` in problem.toml): `causal` (changing later positions of
the inputs leaves earlier outputs alone), `padding` (changing positions its mask hides leaves
the output alone), `batch` (changing the other examples of a batch leaves the first example's
output alone) and `permutation` (reordering the positions of an input that has no mask
reorders the output the same way). The derived inputs run through the submission in one more
sandbox job; the relations are checked here, on its outputs as data. A probe that cannot be
applied to the tests, or whose run fails, says nothing; one that holds says nothing either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from judge.diagnosis.case import Case, Extra
from judge.package import Probe
from judge.verdicts import Finding, Verdict

# Runs argument sets through the submission in one sandbox job, each with its test's redraw of
# the Flax parameters (the output it is compared with had it): one flat output (or None) per
# set. The engine gives it to the diagnosis (Case.run).
RunArgs = Callable[[list[dict], list[int], list[dict | None]], list[np.ndarray | None]]
# Reordering or recomputing in another order moves float32 results by rounding only.
SLACK = 10.0


@dataclass
class Derived:
    probe: Probe
    args: dict  # the derived inputs
    cut: int  # causal: the first changed position


def probe_plan(case: Case) -> tuple[list[tuple[int, Derived]], Extra]:
    """Each probe's derived inputs, from the first wrong test it applies to, and what to run
    for them."""
    probes = case.package.manifest.probes
    if (not probes or case.run is None or not case.probes
            or case.result.verdict is not Verdict.WA):
        return [], Extra()
    # Wrong tests with a finite output (NaN compares unequal to itself, which a relation
    # would read as a change); each probe takes the first of them it applies to.
    targets = [i for i in case.failed if case.result.tests[i].verdict is Verdict.WA
               and (o := case.result.tests[i].output) is not None and bool(np.isfinite(o).all())]
    jobs: list[tuple[int, Derived]] = []
    for p in probes:
        for i in targets:
            if (d := derive(p, case.args[i])) is not None:
                jobs.append((i, d))
                break
    # The output a relation is checked against had its test's redraw: so does the run.
    return jobs, Extra([d.args for _, d in jobs], [int(case.expected[i].size) for i, _ in jobs],
                       [r.model_dump() if (r := case.tests[i].redraw) else None
                        for i, _ in jobs])


def probe_findings(case: Case, jobs: list[tuple[int, Derived]],
                   outs: list[np.ndarray | None]) -> list[Finding]:
    found = []
    for (i, d), out in zip(jobs, outs, strict=True):
        got = case.result.tests[i].output
        if got is None or out is None or out.size != got.size or not np.isfinite(out).all():
            continue
        shape = case.shapes[i]
        broken = check(d, got.reshape(shape), out.reshape(shape), case.tol.atol * SLACK,
                       case.tol.rtol * SLACK)
        if broken is not None:
            found.append(Finding("property", broken[0], broken[1], [case.tests[i].name],
                                 sites=tuple(d.probe.sites)))
    return found


def derive(p: Probe, args: dict) -> Derived | None:
    """The probe's inputs from a test's, or None where it does not apply to this test."""
    arrays = [args.get(name) for name in p.inputs]
    if not all(isinstance(a, np.ndarray) and a.ndim > p.axis for a in arrays):
        return None
    n = arrays[0].shape[p.axis]  # type: ignore[union-attr]
    if n < 2 or any(a.shape[p.axis] != n for a in arrays):  # type: ignore[union-attr]
        return None
    rng = np.random.default_rng(12345)
    new = dict(args)
    if p.kind == "causal":
        cut = n // 2
        for name, a in zip(p.inputs, arrays, strict=True):
            new[name] = _changed(a, p.axis, slice(cut, None), rng)  # type: ignore[arg-type]
        return Derived(p, new, cut)
    if p.kind == "padding":
        mask = args.get(p.mask or "")
        if not isinstance(mask, np.ndarray) or mask.dtype != bool or mask.all():
            return None
        for name, a in zip(p.inputs, arrays, strict=True):
            assert isinstance(a, np.ndarray)
            if a.shape[:mask.ndim] != mask.shape:
                return None
            hidden = np.broadcast_to(~mask.reshape(mask.shape + (1,) * (a.ndim - mask.ndim)),
                                     a.shape)
            noise = np.asarray(rng.standard_normal(a.shape), dtype=a.dtype)
            new[name] = np.where(hidden, a + noise * (float(np.std(a)) + 1.0), a)
        return Derived(p, new, 0)
    if p.kind == "batch":
        for name, a in zip(p.inputs, arrays, strict=True):
            new[name] = _changed(a, p.axis, slice(1, None), rng)  # type: ignore[arg-type]
        return Derived(p, new, 1)
    # permutation: the positions along the axis in reverse order
    for name in p.inputs:
        new[name] = np.ascontiguousarray(np.flip(args[name], axis=p.axis))
    return Derived(p, new, 0)


def _changed(a: np.ndarray, axis: int, where: slice, rng: np.random.Generator) -> np.ndarray:
    """`a` with the positions `where` along `axis` given other values of the same kind:
    noise for reals, the input's own values in reverse order for ids (they stay valid)."""
    out = a.copy()
    index = (slice(None),) * axis + (where,)
    if a.dtype.kind == "f":
        noise = np.asarray(rng.standard_normal(out[index].shape), dtype=a.dtype)
        out[index] = out[index] + noise * (float(np.std(a)) + 1.0)
    else:
        out[index] = np.flip(a, axis=axis)[index]
        if np.array_equal(out, a):
            out[index] = np.roll(a, 1, axis=axis)[index]
    return out


def check(d: Derived, before: np.ndarray, after: np.ndarray, atol: float,
          rtol: float) -> tuple[str, str] | None:
    """(title, detail) when the relation does not hold, None when it does."""
    p = d.probe
    if p.kind == "causal":
        index = (slice(None),) * p.output_axis + (slice(0, d.cut),)
        moved = _moved(before[index], after[index], atol, rtol)
        if moved is None:
            return None
        pos, delta = int(moved[p.output_axis]), moved[-1]
        return ("Earlier positions see later ones", (
            f"Changing the inputs from position {d.cut} on changed the output at position "
            f"{pos} (by up to {delta:.3g}): the block sees the future. Either the causal "
            "mask does not do its work (missing, inverted: query i keeps keys j <= i, or "
            "applied where it does not reach the scores), or something else mixes "
            "positions: keys or values taken from the wrong sequence, a softmax over the "
            "query axis, heads merged back without moving the head axis first."))
    if p.kind == "padding":
        moved = _moved(before, after, atol, rtol)
        if moved is None:
            return None
        return ("The padding mask does not hide padded positions", (
            f"Changing only the positions `{p.mask}` marks as padding changed the output (by "
            f"up to {moved[-1]:.3g}): they must be hidden from attention. Check that the "
            "mask is applied to the keys (the last axis of the scores), with the right "
            "polarity (True means a real position to attend)."))
    if p.kind == "batch":
        index = (slice(None),) * p.output_axis + (slice(0, 1),)
        moved = _moved(before[index], after[index], atol, rtol)
        if moved is None:
            return None
        return ("Examples of a batch affect each other", (
            f"Changing the other examples of the batch changed the first example's output "
            f"(by up to {moved[-1]:.3g}): something mixes examples, such as a mean, a "
            "softmax or a normalisation over the batch axis, or a reshape that merges the "
            "batch with another axis."))
    moved = _moved(np.flip(before, axis=p.output_axis), after, atol, rtol)
    if moved is None:
        return None
    return ("The output depends on the order of positions", (
        f"Reversing the order of the positions changed the outputs (by up to "
        f"{moved[-1]:.3g}), not only their order: this block has no mask and no position "
        "term, so each position's output may depend only on the set of positions. Look for "
        "a mask (a causal one?) or a position-dependent step that does not belong here."))


def _moved(a: np.ndarray, b: np.ndarray, atol: float,
           rtol: float) -> tuple[float, ...] | None:
    """The index of the largest change beyond tolerance with its size last, or None."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a64 - b64)
        over = ~(diff <= atol + rtol * np.abs(a64))
    if not over.any():
        return None
    diff = np.where(over, np.nan_to_num(diff, nan=np.inf), 0.0)
    idx = np.unravel_index(int(np.argmax(diff)), diff.shape)
    return (*(float(i) for i in idx), float(diff[idx]))
