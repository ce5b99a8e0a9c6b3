"""Redrawn parameters (judge/portable/flax_redraw.py): while a redraw is applied, every
parameter a Flax module creates is the judge's draw, from the key Flax hands its initialiser,
whatever the initialiser; the same for a model initialised eagerly or under jax.jit, and for
a jitted function traced before the redraw. Outside a redraw, Flax is untouched. In this
process, as the trusted process runs it; the sandbox's use is proven by the packaged
submissions' verdicts (tests/problems) and the structure tests below."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from judge.diagnosis.structure import gaps
from judge.engine import judge
from judge.interpret import redrawn_tree
from judge.package import Redraw, load_package
from judge.portable.flax_redraw import param_redraw, redraw_key
from judge.verdicts import TestResult, Verdict
from tests.conftest import REPO

SPEC = Redraw().model_dump()
LARGE = Redraw(gain=8.0).model_dump()
STRUCTURE = REPO / "tests" / "fixtures" / "structure"


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        h = nn.Dense(6, kernel_init=nn.initializers.zeros)(h)  # any initialiser is replaced
        return nn.Dense(4, name="out")(nn.relu(h))


X = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    param_redraw.install()


def _leaves(variables) -> dict[str, np.ndarray]:
    flat = jax.tree_util.tree_flatten_with_path(variables)[0]
    return {"/".join(str(getattr(k, "key", k)) for k in path): np.asarray(v) for path, v in flat}


def _init(seed: int, spec: dict | None) -> dict[str, np.ndarray]:
    with param_redraw.applied(spec):
        return _leaves(Block().init(jax.random.PRNGKey(seed), X))


def test_outside_a_redraw_flax_initialises_as_it_ships():
    plain = _leaves(Block().init(jax.random.PRNGKey(0), X))
    assert _init(0, None).keys() == plain.keys()
    for path, value in _init(0, None).items():
        np.testing.assert_array_equal(value, plain[path])
    assert np.all(plain["params/LayerNorm_0/scale"] == 1.0)
    assert np.all(plain["params/Dense_0/kernel"] == 0.0)


def test_every_parameter_is_the_judges_draw():
    plain, drawn = _init(0, None), _init(0, SPEC)
    assert drawn.keys() == plain.keys()
    for path, value in drawn.items():
        assert value.shape == plain[path].shape and value.dtype == plain[path].dtype
        assert not np.allclose(value, plain[path]), path
    scale = drawn["params/LayerNorm_0/scale"]
    assert np.all((scale >= 0.5) & (scale <= 1.5))
    assert np.std(drawn["params/out/bias"]) > 0.05


def test_the_draw_follows_the_seed_and_the_spec_not_the_call():
    first, again = _init(3, SPEC), _init(3, SPEC)
    for path in first:
        np.testing.assert_array_equal(first[path], again[path])
    other_seed, large = _init(4, SPEC), _init(3, LARGE)
    kernel = "params/Dense_0/kernel"
    assert not np.allclose(other_seed[kernel], first[kernel])
    np.testing.assert_allclose(large[kernel], 8.0 * first[kernel], rtol=1e-6)


def test_gains_scale_one_submodule():
    spec = Redraw(gains={"out": 1e-3}).model_dump()
    small, full = _init(5, spec), _init(5, SPEC)
    np.testing.assert_allclose(small["params/out/kernel"], 1e-3 * full["params/out/kernel"],
                               rtol=1e-6)
    np.testing.assert_array_equal(small["params/Dense_0/kernel"], full["params/Dense_0/kernel"])
    assert redraw_key(spec) != redraw_key(SPEC)


def test_the_same_under_jit_and_for_a_function_traced_before():
    eager = Block().apply({"params": _nested(_init(1, SPEC))}, X)

    @partial(jax.jit, static_argnums=0)
    def run(seed: int, x):
        block = Block()
        return block.apply(block.init(jax.random.PRNGKey(seed), x), x)

    outside = np.asarray(run(1, X))  # traced and compiled with Flax's own initialisers
    with param_redraw.applied(SPEC):
        inside = np.asarray(run(1, X))
        per_call = np.asarray(jax.jit(Block().init)(jax.random.PRNGKey(1), X)["params"]
                              ["out"]["bias"])
    np.testing.assert_allclose(inside, np.asarray(eager), rtol=1e-5, atol=1e-6)
    assert not np.allclose(inside, outside)
    np.testing.assert_allclose(per_call, _init(1, SPEC)["params/out/bias"], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(run(1, X)), outside)  # and back again
    with param_redraw.applied(LARGE):  # the same trace, under another redraw: its values
        large = jax.jit(lambda x: Block().init(jax.random.PRNGKey(1), x))
        first = np.asarray(large(X)["params"]["out"]["kernel"])
    with param_redraw.applied(SPEC):
        again = np.asarray(large(X)["params"]["out"]["kernel"])
    np.testing.assert_allclose(first, 8.0 * again, rtol=1e-6)


def _nested(flat: dict[str, np.ndarray]) -> dict:
    out: dict = {}
    for path, value in flat.items():
        parts = path.split("/")[1:]
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


# --- the parameter tree on a redrawn test ----------------------------------------------------

TREE = [("params/LayerNorm_0/scale", (4,)), ("params/LayerNorm_0/bias", (4,)),
        ("params/Dense_0/kernel", (4, 6)), ("params/Dense_0/bias", (6,))]


def test_a_tree_other_than_the_references_is_a_wrong_answer_that_says_how():
    same = TestResult("t", Verdict.AC, variables=list(TREE))
    redrawn_tree(same, TREE)
    assert same.verdict is Verdict.AC
    no_bias = TestResult("t", Verdict.AC, variables=TREE[:3])
    redrawn_tree(no_bias, TREE)
    assert no_bias.verdict is Verdict.WA
    assert "no biases" in (no_bias.message or "") and "redraw" in (no_bias.message or "")
    renamed = TestResult("t", Verdict.AC,
                         variables=[(p.replace("Dense_0", "ffn"), s) for p, s in TREE])
    redrawn_tree(renamed, TREE)
    assert renamed.verdict is Verdict.WA and "`ffn`" in (renamed.message or "")
    reshaped = TestResult("t", Verdict.AC, variables=TREE[:2] + [
        ("params/Dense_0/kernel", (6, 4)), ("params/Dense_0/bias", (6,))])
    redrawn_tree(reshaped, TREE)
    assert reshaped.verdict is Verdict.WA and "(6, 4)" in (reshaped.message or "")
    none = TestResult("t", Verdict.WA, message="3 of 12 values differ")
    redrawn_tree(none, TREE)
    assert "no Flax parameters" in (none.message or "")


def test_what_a_tree_lacks_by_kind():
    assert [g.title for g in gaps(TREE[:3], TREE)] == [
        "Your layers have no biases where the statement's have"]
    assert [g.title for g in gaps(TREE[1:], TREE)] == ["Your LayerNorms have no scale"]
    assert gaps(TREE, TREE) == []


# --- structures only the redrawn tests see, judged in the sandbox -----------------------------

CASES = [
    ("encoder-block", "encoder_block__no_biases.py",
     "Your layers have no biases where the statement's have"),
    ("encoder-block", "encoder_block__layernorm_without_scale.py",
     "Your LayerNorms have no scale"),
    ("decoder-block-preln", "decoder_block_preln__shared_layernorm.py",
     "Your model has fewer LayerNorms than the statement's"),
    ("decoder-block-preln", "decoder_block_preln__ffn_without_biases.py",
     "Your layers have no biases where the statement's have"),
]


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize(("slug", "file", "title"), CASES,
                         ids=[c[1].removesuffix(".py") for c in CASES])
def test_a_structure_right_only_at_initialisation_fails_the_redrawn_tests(
        sandbox, slug: str, file: str, title: str):
    """Accepted by the samples, with a note saying the hidden tests will see it; failed by
    exactly the redrawn tests, each saying how the tree differs, and named so, with no
    finding that points elsewhere."""
    package = load_package(REPO / "problems" / slug)
    code = (STRUCTURE / file).read_text()
    run = judge(package, code, sandbox, samples_only=True, probes=False)
    assert run.verdict is Verdict.AC, run.to_dict()
    assert [n.title for n in run.notes] == [title]
    assert "The hidden tests that redraw the parameters" in run.notes[0].detail
    submit = judge(package, code, sandbox)
    assert submit.verdict is Verdict.WA, submit.to_dict()
    failed = {t.name for t in submit.tests if t.verdict is not Verdict.AC}
    assert failed == {t.name for t in package.tests if t.redraw}, failed
    for t in submit.tests:
        if t.name in failed:
            assert title in (t.message or ""), t.message
    assert submit.diagnosis and submit.diagnosis[0].title == title, submit.diagnosis
    # The probes run the submission with the same redraw as the test whose output they
    # compare with: a causal block stays causal, a permutation-equivariant one equivariant.
    assert not [f for f in submit.diagnosis if f.kind in ("property", "numeric")], \
        submit.diagnosis
    assert submit.notes == []


def test_structure_fixtures_are_wrong_only_by_structure():
    """Each fixture names what it lacks in its first line, and lacks it."""
    for _, file, _ in CASES:
        assert (STRUCTURE / file).read_text().startswith("# Not the asked-for structure"), file


def test_redraws_only_for_flax_problems(tmp_path: Path):
    import shutil

    root = tmp_path / "double"
    shutil.copytree(REPO / "tests" / "fixtures" / "problems" / "double", root)
    manifest = root / "problem.toml"
    manifest.write_text(manifest.read_text().replace(
        'params = { n = 4, m = 5 }', 'params = { n = 4, m = 5 }\nredraw = { gain = 2.0 }', 1))
    from judge.package import PackageError

    with pytest.raises(PackageError, match="only for problems whose frameworks include flax"):
        load_package(root)


def test_a_redraw_is_its_own_jax_cache_key():
    assert redraw_key(None) is None and redraw_key({}) is None
    assert redraw_key(SPEC) == redraw_key(dict(SPEC))
    assert redraw_key(SPEC) != redraw_key(LARGE)
    assert jnp.asarray(1.0) is not None  # jax is importable here; the key is plain data
