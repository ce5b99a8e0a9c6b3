"""Every wrong answer located: the sub-layer a mistake is in, found by switching sub-layers off
in the submission and the reference alike (judge/diagnosis/location.py). The rule on given
agreements; the switches on a test's arguments; and, in the real sandbox, wrong answers
written apart from the packaged ones, in other frameworks and styles, each located to its
sub-layer with no name that contradicts it. (Every killed mutant of the four problems is
located where it sits: `problems validate`, tests/problems.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judge.diagnosis.location import REST, agreement, consistent, locate
from judge.engine import judge
from judge.package import Tolerance, load_package
from judge.package.location import Location, Sublayer, switched_off, variants
from judge.verdicts import Verdict
from tests.conftest import REPO

LOC = Location(rest="the residual stream", rest_sites=["the residual stream"], sublayers=[
    Sublayer(name="a", title="the first attention", off=["params.wo"], sites=["every attention"]),
    Sublayer(name="b", title="the second attention", off=["blocks[:, 1]"],
             sites=["every attention"]),
    Sublayer(name="c", title="the feed-forward sub-layer", off=["module:Dense_1"])])


def _agree(**kw: bool | None) -> dict[str, bool | None]:
    out: dict[str, bool | None] = {v.key: True for v in variants(LOC)}
    out["on"] = False
    out.update({k.replace("_", ":", 1): v for k, v in kw.items()})
    return out


def test_the_rule():
    assert locate(LOC, _agree(off_all=False)) == ([REST], False)
    assert locate(LOC, _agree(only_b=False, off_a=False, off_c=False)) == (["b"], False)
    assert locate(LOC, _agree(only_a=False, only_c=False)) == (["a", "c"], False)
    # Each alone agrees; switching either of two off makes the whole agree: wired together.
    assert locate(LOC, _agree(off_a=True, off_b=True, off_c=False)) == (["a", "b"], True)
    assert locate(LOC, {**_agree(), "on": True}) == ([], False)  # nothing to locate
    assert locate(LOC, _agree(only_a=None)) == ([], False)  # evidence missing: no finding


def test_a_sub_layer_seen_through_another_is_explained_by_it():
    seen = Location(rest="r", sublayers=[
        Sublayer(name="enc", title="the encoder", off=["x"], through=["cross"]),
        Sublayer(name="cross", title="the cross-attention", off=["y"])])
    keys = [v.key for v in variants(seen)]
    assert "only:enc" in keys and ("off:enc", ("enc",)) in [(v.key, v.off) for v in
                                                            variants(seen)]
    only_enc = next(v for v in variants(seen) if v.key == "only:enc")
    assert only_enc.off == ()  # the cross-attention stays on with it
    both = {k: True for k in keys} | {"on": False, "only:enc": False, "only:cross": False}
    assert locate(seen, both) == (["cross"], False)
    enc = {k: True for k in keys} | {"on": False, "only:enc": False}
    assert locate(seen, enc) == (["enc"], False)


def test_switches_zero_what_they_name_and_nothing_else():
    args = {"params": {"wo": np.ones((2, 2)), "wq": np.ones((2, 2))},
            "blocks": np.ones((3, 4, 2)), "x": np.ones(2)}
    off, redraw = switched_off(LOC, ("a", "b", "c"), args, None, flax=True)
    assert not off["params"]["wo"].any() and off["params"]["wq"].all()
    assert not off["blocks"][:, 1].any() and off["blocks"][:, 0].all()
    assert redraw is not None and redraw["gains"] == {"Dense_1": 0.0}
    assert args["params"]["wo"].all() and args["blocks"].all()  # the test's own untouched
    _, none = switched_off(LOC, (), args, None, flax=False)
    assert none is None


def test_nan_a_switched_off_sub_layer_would_pass_on_is_left_out():
    vs = variants(LOC)
    want = [np.ones(4) for _ in vs]
    tol = Tolerance(atol=1e-6, rtol=1e-6)
    # Switching everything off removes it: NaN is a difference like any other.
    got = [np.array([np.nan, 1, 1, 1]) if v.key == "only:a" else np.ones(4) for v in vs]
    assert agreement(vs, got, want, tol)["only:a"] is False
    # It survives switching everything off: left out where it is, nothing said where it is
    # everywhere.
    got = [np.array([np.nan, 1, 1, 1]) for _ in vs]
    got[[v.key for v in vs].index("only:b")] = np.array([np.nan, 2, 1, 1])
    got[[v.key for v in vs].index("only:c")] = np.full(4, np.nan)
    seen = agreement(vs, got, want, tol)
    assert seen["off:all"] is True and seen["only:b"] is False and seen["only:c"] is None
    assert seen["on"] is False  # the whole block: NaN where the reference is finite


def test_a_name_elsewhere_than_the_location_is_not_consistent():
    where = ("the second attention", "every attention")
    assert consistent(("the second attention",), where, LOC)
    assert consistent(("every attention",), where, LOC)
    assert not consistent(("the feed-forward sub-layer",), where, LOC)
    assert consistent(("a place the package does not know",), where, LOC)


HERE = REPO / "tests" / "fixtures" / "located"
CASES = [
    ("decoder-block", "decoder_block__torch_gelu_ffn.py", {"feed-forward"}),
    ("decoder-block", "decoder_block__jax_cross_scaled_by_d_model.py", {"cross-attention"}),
    ("encoder-decoder", "encoder_decoder__torch_cross_reads_decoder.py", {"cross-attention"}),
    ("decoder-block-preln", "decoder_block_preln__flax_silu_ffn.py", {"feed-forward"}),
    ("encoder-block", "encoder_block__attention_reads_raw_input.py", {"self-attention"}),
]


@pytest.mark.sandbox
@pytest.mark.parametrize(("slug", "file", "wrong"), CASES,
                         ids=[c[1].removesuffix(".py") for c in CASES])
def test_wrong_answers_of_other_styles_are_located(sandbox, slug: str, file: str,
                                                   wrong: set[str]):
    from judge.trusted.variant_outputs import variant_bank

    package = load_package(REPO / "problems" / slug)
    assert variant_bank(package, wait=True)
    res = judge(package, Path(HERE / file).read_text(), sandbox, probes=False)
    assert res.verdict is Verdict.WA, res.to_dict()
    where = [f for f in res.diagnosis if f.kind == "location"]
    assert where, [f.title for f in res.diagnosis]
    assert {p.name for p in where[0].parts if p.agrees is False} == wrong, where[0]
    loc = package.manifest.location
    assert loc is not None
    for f in res.diagnosis:
        assert not f.sites or consistent(f.sites, where[0].sites, loc), f.title
