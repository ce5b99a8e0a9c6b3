"""The sandbox's Flax shortcuts (judge/inside/runner_flax.py). The memo of parameter shape
and RNG key checks: an `apply` or `init` that the memo answers says and returns exactly what
Flax's own check would, a wrong shape or key is still refused, and what the memo cannot key
by its contents is traced as before. Plain attributes: layers bound without Flax's adoption
walk for values that hold no layer end up exactly as with it. The static fold-in: the same
keys, bit for bit, as JAX's Threefry fold-in. Plain promotion: the same arrays as
`jnp.asarray`. All only under the Flax release they were read against (their guard:
tests/judge/test_library_patches.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax.core import scope as flax_scope

from judge.engine import judge
from judge.inside.runner_flax import (
    ParamShapeMemo,
    PlainAttributes,
    PlainPromotion,
    StaticFoldIn,
    Unkeyable,
)
from judge.package import Package, load_package
from judge.sandbox import BwrapConfig, BwrapSandbox
from judge.verdicts import Verdict
from tests.conftest import REPO
from tests.judge.conftest import forked_sandbox


@contextlib.contextmanager
def _installed(shortcut: Any, owner: Any, name: str) -> Iterator[Any]:
    """`shortcut` installed over `owner.name`, which is put back afterwards."""
    original = getattr(owner, name)
    shortcut.install()
    assert shortcut.installed and getattr(owner, name) is not original
    try:
        yield shortcut
    finally:
        setattr(owner, name, original)


@pytest.fixture
def memo() -> Iterator[ParamShapeMemo]:
    with _installed(ParamShapeMemo(), jax, "eval_shape") as m:
        yield m


X = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        y = nn.MultiHeadDotProductAttention(num_heads=2)(nn.LayerNorm()(x))
        return nn.Dense(8)(jax.nn.relu(nn.Dense(16)(y)))


def _mine(key, shape, dtype=jnp.float32):
    return jnp.ones(shape, dtype)


def test_applies_answered_from_the_memo_give_the_same_outputs():
    block = Block()
    variables = block.init(jax.random.PRNGKey(1), X)
    want = np.asarray(block.apply(variables, X))
    original = jax.eval_shape
    m = ParamShapeMemo()
    m.install()
    try:
        first = np.asarray(block.apply(variables, X))
        # The query, key and value projections are alike: one trace for the three.
        assert (m.traced, m.hits) == (10, 4) and len(jax.tree_util.tree_leaves(variables)) == 14
        second = np.asarray(block.apply(variables, X))
        assert (m.traced, m.hits) == (10, 18)  # nothing traced the second time
    finally:
        jax.eval_shape = original  # type: ignore[attr-defined]
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(second, want)


def test_rng_key_checks_answered_from_the_memo_change_nothing(memo):
    block = Block()
    first = block.init(jax.random.PRNGKey(1), X)  # the first check of this key: traced
    checks = memo.rng_checks
    again = block.init(jax.random.PRNGKey(1), X)
    assert memo.rng_checks > checks
    for a, b in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(again),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    # A key of the wrong shape is refused as Flax refuses it, before and after the memo.
    bad = jnp.zeros((3,), jnp.uint32)
    with pytest.raises(flax_scope.errors.InvalidRngError) as got:
        block.init(bad, X)
    jax.eval_shape = jax.eval_shape.__wrapped__  # type: ignore[attr-defined]
    with pytest.raises(flax_scope.errors.InvalidRngError) as want:
        block.init(bad, X)
    assert str(got.value) == str(want.value)


def test_a_wrong_shape_is_refused_as_flax_refuses_it(memo):
    x = jnp.asarray(X)
    params4 = nn.Dense(4).init(jax.random.PRNGKey(0), x)
    nn.Dense(4).apply(params4, x)  # the memo now knows Dense(4)'s shapes
    nn.Dense(4).apply(params4, x)
    assert memo.hits >= 2
    with pytest.raises(flax_scope.errors.ScopeParamShapeError) as got:
        nn.Dense(5).apply(params4, x)
    jax.eval_shape = jax.eval_shape.__wrapped__  # type: ignore[attr-defined]
    with pytest.raises(flax_scope.errors.ScopeParamShapeError) as want:
        nn.Dense(5).apply(params4, x)
    assert str(got.value) == str(want.value)


def test_other_initializer_settings_are_other_keys(memo):
    x = jnp.asarray(X)
    dense = nn.Dense(4, kernel_init=nn.initializers.variance_scaling(1.0, "fan_in", "normal"))
    params = dense.init(jax.random.PRNGKey(0), x)
    dense.apply(params, x)
    traced = memo.traced
    other = nn.Dense(4, kernel_init=nn.initializers.variance_scaling(2.0, "fan_in", "normal"))
    other.apply(params, x)
    assert memo.traced == traced + 1  # the kernel's other scale: traced; the bias: a hit
    same = nn.Dense(4, kernel_init=nn.initializers.variance_scaling(1.0, "fan_in", "normal"))
    same.apply(params, x)
    assert memo.traced == traced + 1


def test_what_the_submission_defines_is_traced_every_time(memo):
    class Mine(nn.Module):
        @nn.compact
        def __call__(self, x):
            return x @ self.param("w", _mine, (x.shape[-1], 3))

    class MyDense(nn.DenseGeneral):
        pass

    x = jnp.asarray(X)
    params = Mine().init(jax.random.PRNGKey(0), x)
    for n in range(1, 4):
        Mine().apply(params, x)
        assert (memo.unkeyed, memo.traced, memo.hits) == (n, 0, 0)
    # A layer of the submission's own class: DenseGeneral's initializers close over the
    # layer, so both are traced every time.
    params = MyDense(3).init(jax.random.PRNGKey(0), x)
    for n in range(1, 4):
        MyDense(3).apply(params, x)
        assert (memo.unkeyed, memo.traced, memo.hits) == (3 + 2 * n, 0, 0)
    # The same layer of Flax's class is keyed.
    params = nn.DenseGeneral(3).init(jax.random.PRNGKey(0), x)
    for n in range(1, 4):
        nn.DenseGeneral(3).apply(params, x)
        assert (memo.unkeyed, memo.traced, memo.hits) == (9, 2, 2 * (n - 1))


def test_keys():
    m = ParamShapeMemo()
    m.install()
    try:
        assert len({m.key(1), m.key(1.0), m.key(True)}) == 3
        assert m.key((8, 16)) == m.key((8, 16)) != m.key([8, 16])
        assert m.key(jnp.float32) == m.key(jnp.float32) != m.key(jnp.float16)
        assert m.key(np.dtype("float32")) == m.key(np.dtype("float32"))
        a = nn.initializers.lecun_normal()
        assert m.key(a) == m.key(nn.initializers.lecun_normal())
        assert m.key(a) != m.key(nn.initializers.he_normal())
        assert m.key(nn.Dense(4)) == m.key(nn.Dense(4)) != m.key(nn.Dense(5))
        assert m.key(functools.partial(nn.Dense, 4)) != m.key(functools.partial(nn.Dense, 5))
        for unknown in (_mine, lambda k, s: None, object(), np.ones(2), {1, 2}):
            with pytest.raises(Unkeyable):
                m.key(unknown)
        nested: list = []
        nested.append(nested)
        with pytest.raises(Unkeyable):
            m.key(nested)
    finally:
        jax.eval_shape = jax.eval_shape.__wrapped__  # type: ignore[attr-defined]


class Inner(nn.Module):
    width: int
    act: object = jax.nn.relu

    @nn.compact
    def __call__(self, x):
        return self.act(nn.Dense(self.width)(x))


class Outer(nn.Module):
    """Fields of every sort: a layer passed in (adopted), a list of layers, a function, a
    partial, a class, a dtype, a dict, numbers and None."""

    given: nn.Module
    stack: tuple
    width: int = 6
    scale: float = 0.5
    gate: object = jax.nn.sigmoid
    make: object = functools.partial(nn.Dense, 5)
    kind: object = nn.LayerNorm
    dtype: object = jnp.float32
    options: object = None
    table: dict = dataclasses.field(default_factory=lambda: {"a": 1})

    @nn.compact
    def __call__(self, x):
        y = self.given(x) * self.scale
        for layer in self.stack:
            y = layer(y)
        y = self.kind(dtype=self.dtype)(self.make()(y)) + self.table["a"]
        return self.gate(nn.Dense(self.width)(y))


def _outer_run():
    model = Outer(given=Inner(7), stack=[Inner(4, act=jnp.tanh), nn.Dense(3)])
    variables = model.init(jax.random.PRNGKey(3), X)
    return variables, np.asarray(model.apply(variables, X))


def test_plain_attributes_leave_every_layer_as_flax_makes_it():
    from flax.linen import module as flax_module

    want_variables, want = _outer_run()
    original = flax_module.Module._register_submodules
    shortcut = PlainAttributes()
    shortcut.install()
    try:
        assert shortcut.installed
        got_variables, got = _outer_run()
    finally:
        flax_module.Module._register_submodules = original
    assert shortcut.direct > 50
    assert (jax.tree_util.tree_structure(got_variables)
            == jax.tree_util.tree_structure(want_variables))
    for a, b in zip(jax.tree_util.tree_leaves(got_variables),
                    jax.tree_util.tree_leaves(want_variables), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got, want)


def test_only_under_the_flax_they_were_read_against(monkeypatch):
    """The sandbox installs them through the guard of the libraries' patches only, which
    refuses another Flax release."""
    import flax

    from judge.inside.library_patches import FLAX_RELEASES, install_library_patches

    assert flax.__version__ in FLAX_RELEASES
    pinned = (REPO / "pyproject.toml").read_text()
    assert any(f'"flax=={v}"' in pinned for v in FLAX_RELEASES)
    monkeypatch.setattr(flax, "__version__", "0.0.0")
    eval_shape = jax.eval_shape
    assert not install_library_patches({}).active
    assert jax.eval_shape is eval_shape


# The encoder block as the statement describes it, checking from inside the sandbox that its
# applies are answered from the memo the warm-up filled: not one initializer traced.
CHECKS_THE_MEMO = '''
import jax
import jax.numpy as jnp
import flax.linen as nn


class PreLNEncoderBlock(nn.Module):
    num_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):
        y = nn.LayerNorm()(x)
        x = x + nn.MultiHeadDotProductAttention(num_heads=self.num_heads)(y)
        y = nn.LayerNorm()(x)
        y = jax.nn.relu(nn.Dense(self.d_ff)(y))
        return x + nn.Dense(x.shape[-1])(y)


def encoder_block_forward(seed, x, num_heads, d_ff):
    cells = jax.eval_shape.__closure__
    memo = dict(zip(jax.eval_shape.__code__.co_freevars, [c.cell_contents for c in cells]))["memo"]
    model = PreLNEncoderBlock(num_heads, d_ff)
    x = jnp.asarray(x)
    params = model.init(jax.random.PRNGKey(seed), x)
    traced, hits = memo.traced, memo.hits
    out = model.apply(params, x)
    seen = (memo.traced - traced, memo.hits - hits)
    assert seen == (0, 16), seen
    assert memo.rng_checks > 0  # init's key check, answered as the warm-up left it
    return jnp.ravel(out)
'''


@pytest.fixture(scope="module")
def encoder() -> Package:
    return load_package(REPO / "problems" / "encoder-block")


@pytest.mark.sandbox
@pytest.mark.parametrize("forked", [False, True], ids=["self-prepared", "forked-warm"])
def test_in_the_sandbox_the_warm_up_has_filled_the_memo(encoder: Package, forked: bool,
                                                      tmp_path: Path):
    sandbox = forked_sandbox() if forked else BwrapSandbox(BwrapConfig(fork_server=False))
    try:
        res = judge(encoder, CHECKS_THE_MEMO, sandbox, samples_only=True, probes=False)
    finally:
        sandbox.close()
    assert res.verdict is Verdict.AC, [(t.verdict, t.message) for t in res.tests]
    if forked:
        assert sandbox.fork_servers is not None and sandbox.fork_servers.forked_warm >= 1


@pytest.fixture
def fold_in() -> Iterator[StaticFoldIn]:
    with _installed(StaticFoldIn(), flax_scope, "_fold_in_static") as shortcut:
        yield shortcut


def _same_array(got: jax.Array, want: jax.Array) -> None:
    assert type(got) is type(want)
    assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("separator", [True, False], ids=["separated", "joined"])
def test_static_fold_in_gives_jaxs_keys_bit_for_bit(fold_in, separator):
    from flax import config as flax_config

    before = flax_config.flax_fix_rng_separator
    flax_config.update("flax_fix_rng_separator", separator)
    try:
        _fold_in_paths(fold_in)
    finally:
        flax_config.update("flax_fix_rng_separator", before)


def _fold_in_paths(fold_in: StaticFoldIn) -> None:
    original = flax_scope._fold_in_static.__wrapped__
    rng = np.random.default_rng(7)
    paths: list[tuple] = [("params",), ("params", "Dense_0", "kernel"), (0,), (True, "x"),
                          ("é", 2**40, ""), (255, 256, 65535)]
    for _ in range(300):
        paths.append(tuple(str(rng.integers(1000)) if rng.random() < 0.5
                           else int(rng.integers(0, 2**62)) for _ in range(rng.integers(1, 5))))
    for i, path in enumerate(paths):
        key = jax.random.PRNGKey(int(rng.integers(0, 2**63)) if i % 2 else i)
        _same_array(flax_scope._fold_in_static(key, path), original(key, path))
    assert fold_in.direct == len(paths)


def test_static_fold_in_leaves_other_keys_and_data_to_flax(fold_in):
    original = flax_scope._fold_in_static.__wrapped__
    typed = jax.random.key(3)
    got, want = flax_scope._fold_in_static(typed, ("a",)), original(typed, ("a",))
    np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(want))
    traced = jax.jit(lambda k: flax_scope._fold_in_static(k, ("a", 1)))(jax.random.PRNGKey(3))
    _same_array(traced, original(jax.random.PRNGKey(3), ("a", 1)))
    key = jax.random.PRNGKey(1)
    assert flax_scope._fold_in_static(key, ()) is key
    with pytest.raises(ValueError, match="Expected int or string"):
        flax_scope._fold_in_static(key, ("a", 1.5))
    assert fold_in.direct == 0


@pytest.fixture
def promotion() -> Iterator[PlainPromotion]:
    from flax.linen import dtypes as flax_dtypes

    assert flax_dtypes.jnp is jnp
    with _installed(PlainPromotion(), flax_dtypes, "jnp") as shortcut:
        yield shortcut


def test_plain_promotion_gives_what_asarray_gives(promotion):
    from flax.linen import dtypes as flax_dtypes
    from flax.linen.dtypes import promote_dtype

    strong = jnp.ones((3, 2), jnp.float32)
    args = [strong, jnp.asarray(1.5), np.ones(2, np.float64), 2, jnp.arange(3), None]
    with_shortcut = flax_dtypes.jnp
    for dtype in (None, jnp.float32, np.dtype("float16"), "bfloat16"):
        flax_dtypes.jnp = jnp
        want = promote_dtype(*args, dtype=dtype)
        flax_dtypes.jnp = with_shortcut
        got = promote_dtype(*args, dtype=dtype)
        for g, w in zip(got, want, strict=True):
            if w is None:
                assert g is None
            else:
                _same_array(g, w)
    assert promote_dtype(strong, dtype=jnp.float32)[0] is strong  # as JAX itself returns it
    assert promotion.direct > 0
    assert flax_dtypes.jnp.ones is jnp.ones  # every other name is jax.numpy's


def test_a_block_initialised_and_applied_with_every_shortcut_is_the_same(fold_in, promotion):
    with_shortcuts = Block().init_with_output(jax.random.PRNGKey(5), X)
    flax_scope._fold_in_static = flax_scope._fold_in_static.__wrapped__
    from flax.linen import dtypes as flax_dtypes

    flax_dtypes.jnp = jnp
    out, variables = Block().init_with_output(jax.random.PRNGKey(5), X)
    for a, b in zip(jax.tree_util.tree_leaves(with_shortcuts),
                    jax.tree_util.tree_leaves((out, variables)), strict=True):
        _same_array(a, b)
    assert fold_in.direct > 10 and promotion.direct > 10
