"""Flax parameter trees: the sandbox reports what `init` created, the judge compares it with
the reference's and says how they differ (units, then the real sandbox)."""

from __future__ import annotations

import pytest

from judge.diagnosis.params import explain, parse_variables
from judge.engine import judge
from judge.package import load_package
from judge.verdicts import Verdict
from tests.conftest import FIXTURES, REPO

REF = [("params/LayerNorm_0/scale", (8,)), ("params/LayerNorm_0/bias", (8,)),
       ("params/Dense_0/kernel", (8, 16)), ("params/Dense_0/bias", (16,)),
       ("params/Dense_1/kernel", (16, 8)), ("params/Dense_1/bias", (8,))]


def _rename(tree, old, new):
    return [(p.replace(f"/{old}/", f"/{new}/"), s) for p, s in tree]


def test_the_report_is_parsed_as_bounded_data_or_not_at_all():
    assert parse_variables([["params/a/kernel", [2, 3]]]) == [("params/a/kernel", (2, 3))]
    for bad in (None, "x", [["p", [1.5]]], [["p", [-1]]], [["", [1]]], [["p", "1"]],
                [["p", [True]]], [["p" * 500, [1]]], [["p", [1] * 9]], [["p", [1]]] * 257,
                [["p", [2**40]]], [["p", None]]):
        assert parse_variables(bad) is None, bad


def test_the_same_tree_says_nothing():
    assert explain(list(REF), list(REF)) is None
    assert explain(list(reversed(REF)), REF) is None  # only listed in another order


def test_other_names_are_named_against_the_reference():
    got = _rename(_rename(REF, "LayerNorm_0", "ln"), "Dense_0", "ff_in")
    title, detail = explain(got, REF)
    assert title == "Your submodules have other names than the reference's"
    assert "`ln` where the reference has `LayerNorm_0`" in detail
    assert "`ff_in` where the reference has `Dense_0`" in detail


def test_the_attention_alias_is_called_by_its_name():
    ref = [("params/MultiHeadDotProductAttention_0/query/kernel", (8, 2, 4))]
    _, detail = explain([("params/MultiHeadAttention_0/query/kernel", (8, 2, 4))], ref)
    assert "alias" in detail and "MultiHeadAttention_0" in detail


def test_dense_layers_created_in_the_other_order():
    got = _rename(_rename(_rename(REF, "Dense_0", "X"), "Dense_1", "Dense_0"), "X", "Dense_1")
    title, detail = explain(got, REF)
    assert title == "Submodules created in the other order"
    assert "`Dense_0`" in detail and "`Dense_1`" in detail and "nn.Dense(D)" in detail


def test_shapes_missing_extra_and_wrapped():
    got = [(p, (8, 32) if p == "params/Dense_0/kernel" else s) for p, s in REF]
    title, detail = explain(got, REF)
    assert title.startswith("Parameters with other shapes")
    assert "`Dense_0/kernel` is (8, 32), the reference's (8, 16)" in detail
    title, detail = explain([x for x in REF if x[0] != "params/Dense_1/bias"], REF)
    assert title == "Your layers have no biases where the statement's have"
    assert "`Dense_1`" in detail and "use_bias" in detail
    extra = REF + [("params/Dense_2/kernel", (8, 8))]
    title, detail = explain(extra, REF)
    assert "yours has `Dense_2/kernel`, the reference's does not" in detail
    wrapped = [(p.replace("params/", "params/Block_0/"), s) for p, s in REF]
    title, detail = explain(wrapped, REF)
    assert title == "Your submodules are wrapped in another module" and "`Block_0/`" in detail


@pytest.mark.parametrize(("problem", "path", "title"), [
    ("encoder-block", FIXTURES.parent / "params" / "encoder_block_setup_own_names.py",
     "Your submodules have other names than the reference's"),
    ("encoder-block", FIXTURES.parent / "params" / "encoder_block_wrapped.py",
     "Your submodules are wrapped in another module"),
    ("encoder-block", REPO / "problems" / "encoder-block" / "submissions" / "wrong_answer"
     / "dense_d_constructed_first.py", "Submodules created in the other order"),
])
def test_a_flax_submission_hears_how_its_tree_differs(sandbox, problem, path, title):
    res = judge(load_package(REPO / "problems" / problem), path.read_text(), sandbox)
    assert res.verdict is Verdict.WA
    found = [f for f in res.diagnosis if f.kind == "parameters"]
    assert [f.title for f in found] == [title]
    assert found[0].tests and set(found[0].tests) <= {t.name for t in res.tests}


def test_right_trees_written_otherwise_get_no_parameters_finding(sandbox):
    """A wrong answer whose tree is the reference's (the mistake is elsewhere) hears nothing
    about parameters; nor do accepted ones written in another style."""
    package = load_package(REPO / "problems" / "encoder-block")
    wrong = package.path / "submissions" / "wrong_answer" / "missing_ffn_residual.py"
    res = judge(package, wrong.read_text(), sandbox)
    assert res.verdict is Verdict.WA
    assert all(f.kind != "parameters" for f in res.diagnosis)
    for name in ("setup_named_attributes.py", "explicit_names_nested_calls.py"):
        ok = judge(package, (package.path / "submissions" / "accepted" / name).read_text(),
                   sandbox)
        assert ok.verdict is Verdict.AC and ok.diagnosis == []


HUGE_TREE = """import flax.linen as nn
import jax
import numpy as np


class Many(nn.Module):
    @nn.compact
    def __call__(self, x):
        for i in range(300):
            x = x + self.param("p" * 60 + str(i), nn.initializers.zeros, (1,))
        return x


def encoder_block_forward(seed, x, num_heads, d_ff):
    m = Many()
    return np.asarray(m.apply(m.init(jax.random.PRNGKey(seed), x), x)).reshape(-1)
"""


def test_a_huge_tree_is_cut_short_and_changes_nothing_but_its_own_finding(sandbox):
    res = judge(load_package(REPO / "problems" / "encoder-block"), HUGE_TREE, sandbox)
    assert res.verdict is Verdict.WA
    found = [f for f in res.diagnosis if f.kind == "parameters"]
    assert len(found) == 1 and len(found[0].detail) < 2000
