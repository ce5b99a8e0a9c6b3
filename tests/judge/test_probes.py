"""Property probes: inputs derived from a failed test's, run through the submission in the
sandbox, a relation between its own outputs checked outside (units, then the real sandbox)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judge.diagnosis.probes import check, derive
from judge.engine import _extra_runs, judge
from judge.package import Probe, load_package
from judge.prepared import prepare
from judge.sandbox.pool import SandboxPool
from judge.verdicts import Verdict
from tests.conftest import FIXTURES, REPO

PROBLEMS = REPO / "problems"


def test_derived_inputs_change_only_what_the_property_allows():
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    ids = np.array([[1, 2, 3, 4]], dtype=np.int32)
    d = derive(Probe(kind="causal", inputs=["x"], axis=1, output_axis=1), {"x": x, "n": 2})
    assert d is not None and d.cut == 2 and d.args["n"] == 2
    assert np.array_equal(d.args["x"][:, :2], x[:, :2]) and not np.allclose(d.args["x"][:, 2:],
                                                                             x[:, 2:])
    d = derive(Probe(kind="causal", inputs=["ids"], axis=1), {"ids": ids})
    assert d is not None and set(d.args["ids"].ravel()) <= set(ids.ravel())  # still valid ids
    assert not np.array_equal(d.args["ids"], ids)
    mask = np.array([[True, True, False, False], [True, True, True, True]])
    d = derive(Probe(kind="padding", inputs=["x"], axis=1, mask="m"), {"x": x, "m": mask})
    assert d is not None
    assert np.array_equal(d.args["x"][mask], x[mask]) and not np.allclose(d.args["x"][~mask],
                                                                          x[~mask])
    assert derive(Probe(kind="padding", inputs=["x"], axis=1, mask="m"),
                  {"x": x, "m": np.ones((2, 4), bool)}) is None  # nothing padded
    d = derive(Probe(kind="batch", inputs=["x"], axis=0), {"x": x, "m": mask})
    assert d is not None and np.array_equal(d.args["x"][0], x[0])
    assert not np.allclose(d.args["x"][1], x[1]) and d.args["m"] is mask
    assert derive(Probe(kind="batch", inputs=["x"], axis=0), {"x": x[:1]}) is None
    assert derive(Probe(kind="batch", inputs=["missing"], axis=0), {"x": x}) is None


def test_relations_hold_for_what_respects_them_and_not_otherwise():
    p = Probe(kind="causal", inputs=["x"], axis=0)
    d = derive(p, {"x": np.ones((4, 2), np.float32)})
    assert d is not None
    before = np.arange(8.0).reshape(4, 2)
    after = before.copy()
    after[2:] += 5  # only later positions move
    assert check(d, before, after, 1e-4, 1e-4) is None
    after[1, 0] += 1  # position 1 moves too
    title, detail = check(d, before, after, 1e-4, 1e-4)  # type: ignore[misc]
    assert title == "Earlier positions see later ones" and "position 1" in detail
    b = derive(Probe(kind="batch", inputs=["x"], axis=0), {"x": np.ones((3, 2), np.float32)})
    assert b is not None
    assert check(b, before[:3], before[:3] + [[0, 0], [1, 1], [2, 2]], 1e-4, 1e-4) is None
    assert check(b, before[:3], before[:3] + 1, 1e-4, 1e-4) is not None
    r = derive(Probe(kind="permutation", inputs=["x"], axis=0), {"x": np.ones((4, 2))})
    assert r is not None
    assert check(r, before, before[::-1], 1e-4, 1e-4) is None
    assert check(r, before, before, 1e-4, 1e-4) is not None


def _code(path: Path) -> str:
    return path.read_text()


@pytest.mark.parametrize(("problem", "path", "title"), [
    ("decoder-block", PROBLEMS / "decoder-block" / "submissions" / "wrong_answer"
     / "no_causal_mask.py", "Earlier positions see later ones"),
    ("decoder-block", PROBLEMS / "decoder-block" / "submissions" / "wrong_answer"
     / "memory_mask_ignored.py", "The padding mask does not hide padded positions"),
    ("decoder-block", FIXTURES.parent / "probes" / "decoder_block_batch_layernorm.py",
     "Examples of a batch affect each other"),
    ("encoder-block", PROBLEMS / "encoder-block" / "submissions" / "wrong_answer"
     / "causal_mask_in_encoder.py", "The output depends on the order of positions"),
])
def test_a_broken_property_is_found_after_a_wrong_answer(sandbox, problem, path, title):
    res = judge(load_package(PROBLEMS / problem), _code(path), sandbox)
    assert res.verdict is Verdict.WA
    assert title in [f.title for f in res.diagnosis if f.kind == "property"]


@pytest.mark.parametrize("problem", ["encoder-block", "decoder-block-preln", "decoder-block",
                                     "encoder-decoder"])
def test_every_accepted_submission_keeps_every_property(sandbox, problem):
    """The probes' relations, checked directly on the packaged accepted submissions (other
    frameworks, jax.jit, setup() style): a property finding is never a correct one's."""
    package = load_package(PROBLEMS / problem)
    prepared = prepare(package, False)
    for sub in package.submissions():
        if sub.expected is not Verdict.AC:
            continue
        for i, args in enumerate(prepared.args):  # noqa: B007 - used after the loop
            derived = [d for p in package.manifest.probes if (d := derive(p, args))]
            if len(derived) == len(package.manifest.probes):
                break  # the first test every probe applies to
        run = _extra_runs(package, _code(sub.path), SandboxPool.around(sandbox))
        outs = run([args] + [d.args for d in derived],
                   [prepared.expected[i].size] * (len(derived) + 1), [None] * (len(derived) + 1))
        shape = prepared.shapes[i]
        assert outs[0] is not None, sub.label
        for d, out in zip(derived, outs[1:], strict=True):
            assert out is not None, (sub.label, d.probe.kind)
            broken = check(d, outs[0].reshape(shape), out.reshape(shape),
                           package.manifest.tolerance.atol * 10,
                           package.manifest.tolerance.rtol * 10)
            assert broken is None, (sub.label, d.probe.kind, broken)
