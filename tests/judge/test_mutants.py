"""The catalogue of mutation operators: each operator on NumPy, JAX, PyTorch and Flax code,
where it must apply and where it must not; and the four references' mutants."""

from __future__ import annotations

import ast
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from judge.mutants import OPERATORS, Mutant, mutants
from judge.mutants.code import Code, detect_framework
from judge.mutants.sites import SiteNames
from judge.package import load_package

ROOT = Path(__file__).resolve().parents[2]


def of(operator: str, source: str, framework: str | None = None) -> list[Mutant]:
    found = mutants(textwrap.dedent(source), framework)
    names = {o.name for o in OPERATORS}
    assert operator in names, f"no operator {operator}"
    return [m for m in found if m.operator.name == operator]


def one(operator: str, source: str, framework: str | None = None) -> str:
    found = of(operator, source, framework)
    assert len(found) == 1, [m.source for m in found]
    return found[0].source + "\n"  # the last line ends like the others


def run(source: str, name: str, *args: object) -> np.ndarray:
    namespace: dict[str, object] = {}
    exec(compile(source, "<snippet>", "exec"), namespace)
    function = namespace[name]
    assert callable(function)
    return np.asarray(function(*args))


RNG = np.random.default_rng(0)
Z = RNG.standard_normal((3, 8))
G, B = RNG.standard_normal(8), RNG.standard_normal(8)

# --- LayerNorm -------------------------------------------------------------------------------

NUMPY_LN = """
import numpy as np
EPS = 1e-5
def ln(z, g, b):
    mu = z.mean(axis=-1, keepdims=True)
    var = ((z - mu) ** 2).mean(axis=-1, keepdims=True)
    return g * (z - mu) / np.sqrt(var + EPS) + b
"""
JAX_LN = """
import jax, jax.numpy as jnp
def ln(z, g, b):
    mu = jnp.mean(z, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(z - mu), axis=-1, keepdims=True)
    return (z - mu) * jax.lax.rsqrt(var + 1e-5) * g + b
"""
TORCH_LN = """
import torch.nn.functional as F
def ln(x, g, b):
    return F.layer_norm(x, x.shape[-1:], g, b, eps=1e-5)
"""
FLAX_LN = """
import flax.linen as nn
class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.LayerNorm()(x)
"""


def _reference_ln(z: np.ndarray, eps: float = 1e-5, ddof: int = 0, inside: bool = True,
                  g: np.ndarray = G, b: np.ndarray | float = B) -> np.ndarray:
    mu = z.mean(-1, keepdims=True)
    var = z.var(-1, keepdims=True, ddof=ddof)
    root = np.sqrt(var + eps) if inside else np.sqrt(var) + eps
    return g * (z - mu) / root + b


@pytest.mark.parametrize(("operator", "expected"), [
    ("layernorm-epsilon-changed", _reference_ln(Z, eps=1e-6)),
    ("layernorm-epsilon-outside-sqrt", _reference_ln(Z, inside=False)),
    ("layernorm-variance-bias", _reference_ln(Z, ddof=1)),
    ("layernorm-scale-dropped", _reference_ln(Z, g=np.ones(8))),
    ("layernorm-offset-dropped", _reference_ln(Z, b=0.0)),
])
def test_layernorm_operators_on_numpy_compute_the_mistake(operator: str, expected: np.ndarray):
    assert np.allclose(run(NUMPY_LN, "ln", Z, G, B), _reference_ln(Z))
    assert np.allclose(run(one(operator, NUMPY_LN), "ln", Z, G, B), expected)


@pytest.mark.parametrize(("operator", "source", "needle"), [
    ("layernorm-epsilon-changed", JAX_LN, "rsqrt(var + 1e-06)"),
    ("layernorm-epsilon-outside-sqrt", JAX_LN, "1.0 / (jax.lax.sqrt(var) + 1e-05)"),
    ("layernorm-variance-bias", JAX_LN, "jnp.sum(jnp.square(z - mu), axis=-1, keepdims=True) / "
                                        "(jnp.square(z - mu).shape[-1] - 1)"),
    ("layernorm-scale-dropped", JAX_LN, "(z - mu) * jax.lax.rsqrt(var + 1e-05) + b"),
    ("layernorm-offset-dropped", JAX_LN, "return (z - mu) * jax.lax.rsqrt(var + 1e-05) * g\n"),
    ("layernorm-epsilon-changed", TORCH_LN, "eps=1e-06"),
    ("layernorm-scale-dropped", TORCH_LN, "F.layer_norm(x, x.shape[-1:], None, b, eps=1e-05)"),
    ("layernorm-offset-dropped", TORCH_LN, "F.layer_norm(x, x.shape[-1:], g, None, eps=1e-05)"),
    ("layernorm-epsilon-changed", FLAX_LN, "nn.LayerNorm(epsilon=1e-05)(x)"),
    ("layernorm-scale-dropped", FLAX_LN, "nn.LayerNorm(use_scale=False)(x)"),
    ("layernorm-offset-dropped", FLAX_LN, "nn.LayerNorm(use_bias=False)(x)"),
])
def test_layernorm_operators_in_other_frameworks(operator: str, source: str, needle: str):
    assert needle in one(operator, source)


def test_torch_variance_flag_flips_and_numpy_var_gets_ddof():
    torch_var = "import torch\ndef v(x):\n    return x.var(-1, unbiased=False)\n"
    assert "x.var(-1, correction=1)" in one("layernorm-variance-bias", torch_var)
    numpy_var = "import numpy as np\ndef v(x):\n    return np.var(x, axis=-1)\n"
    assert "np.var(x, axis=-1, ddof=1)" in one("layernorm-variance-bias", numpy_var)


def test_layernorm_operators_leave_other_code_alone():
    plain = """
    import numpy as np
    def f(x, w, scale):
        y = np.sqrt(x @ w) * scale
        return y.mean(axis=-1) + scale
    """
    for name in ("layernorm-epsilon-changed", "layernorm-epsilon-outside-sqrt",
                 "layernorm-variance-bias", "layernorm-scale-dropped",
                 "layernorm-offset-dropped"):
        assert of(name, plain) == []
    # A PyTorch LayerNorm class has no epsilon-outside form: no mutant rather than a guess.
    assert of("layernorm-epsilon-outside-sqrt", TORCH_LN) == []


# --- Residuals and where the LayerNorm sits ----------------------------------------------------

NUMPY_POST_LN = """
import numpy as np
def ln(z):
    mu = z.mean(-1, keepdims=True)
    return (z - mu) / np.sqrt(((z - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
def block(x, w1, w2):
    x = ln(x + np.tanh(x @ w1))
    x = ln(x + x @ w2)
    return x
"""
FLAX_PRE_LN = """
import flax.linen as nn
class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=2)(h)
        x = x + h
        return x + nn.Dense(x.shape[-1])(nn.relu(nn.LayerNorm()(x)))
"""
TORCH_RESIDUAL = """
import torch.nn.functional as F
def block(x, w, b):
    return F.layer_norm(x + F.linear(x, w, b), x.shape[-1:])
"""
W1, W2 = RNG.standard_normal((8, 8)), RNG.standard_normal((8, 8))


def _ln(z: np.ndarray) -> np.ndarray:
    return (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)


def test_each_residual_is_dropped_on_its_own_numpy():
    dropped = of("residual-dropped", NUMPY_POST_LN)
    assert len(dropped) == 2
    first = _ln(_ln(np.tanh(Z @ W1)) + _ln(np.tanh(Z @ W1)) @ W2)
    second = _ln(_ln(Z + np.tanh(Z @ W1)) @ W2)
    assert np.allclose(run(dropped[0].source, "block", Z, W1, W2), first)
    assert np.allclose(run(dropped[1].source, "block", Z, W1, W2), second)


def test_post_ln_becomes_pre_ln_numpy():
    moved = of("layernorm-pre-instead-of-post", NUMPY_POST_LN)
    assert len(moved) == 2
    x1 = Z + np.tanh(_ln(Z) @ W1)
    assert np.allclose(run(moved[0].source, "block", Z, W1, W2), _ln(x1 + x1 @ W2))


def test_residuals_and_ln_placement_in_flax_jax_and_torch():
    dropped = [m.source for m in of("residual-dropped", FLAX_PRE_LN)]
    assert len(dropped) == 2 and "x = h\n" in dropped[0]
    assert "return nn.Dense(x.shape[-1])(nn.relu(nn.LayerNorm()(x)))" in dropped[1]
    post = [m.source for m in of("layernorm-post-instead-of-pre", FLAX_PRE_LN)]
    assert "h = x\n" in post[0] and "x = nn.LayerNorm()(x + h)" in post[0]
    assert "return nn.LayerNorm()(x + nn.Dense(x.shape[-1])(nn.relu(x)))" in post[1]
    jax_source = NUMPY_POST_LN.replace("import numpy as np", "import jax.numpy as np")
    assert len(of("residual-dropped", jax_source)) == 2
    assert "F.layer_norm(F.linear(x, w, b)" in one("residual-dropped", TORCH_RESIDUAL)


@pytest.mark.parametrize(("operator", "source", "needle"), [
    ("layernorm-pre-instead-of-post", TORCH_RESIDUAL,
     "return x + F.linear(F.layer_norm(x, x.shape[-1:]), w, b)"),
    ("layernorm-pre-instead-of-post", "import flax.linen as nn\ndef f(x):\n"
     "    return nn.LayerNorm()(x + nn.Dense(4)(x))\n",
     "return x + nn.Dense(4)(nn.LayerNorm()(x))"),
    ("layernorm-post-instead-of-pre", "import torch.nn.functional as F\ndef f(x, w):\n"
     "    return x + F.linear(F.layer_norm(x, x.shape[-1:]), w)\n",
     "return F.layer_norm(x + F.linear(x, w), x.shape[-1:])"),
    ("layernorm-post-instead-of-pre", "import jax.numpy as jnp\nimport jax\n"
     "def ln(z):\n    return z / jnp.sqrt(jnp.var(z, -1, keepdims=True) + 1e-5)\n"
     "def f(x, w):\n    h = ln(x)\n    return x + jax.nn.relu(h @ w)\n",
     "h = x\n    return ln(x + jax.nn.relu(h @ w))"),
])
def test_layernorm_placement_in_other_frameworks(operator: str, source: str, needle: str):
    assert needle in one(operator, source)


def test_pre_ln_becomes_post_ln_numpy():
    pre = NUMPY_POST_LN.replace("x = ln(x + np.tanh(x @ w1))", "x = x + np.tanh(ln(x) @ w1)")
    got = run(one("layernorm-post-instead-of-pre", pre), "block", Z, W1, W2)
    x1 = _ln(Z + np.tanh(Z @ W1))
    assert np.allclose(got, _ln(x1 + x1 @ W2))


def test_sums_that_are_not_residuals_are_left_alone():
    formulas = """
    import numpy as np
    def f(t, emb, ids, pos, s, tq):
        g = 0.5 * t * (1 + np.tanh(0.79 * (t + 0.044715 * t ** 3)))
        s = s + np.triu(np.full((tq, tq), -np.inf), k=1)
        return g + emb[ids] + pos + s
    """
    assert of("residual-dropped", formulas) == []
    assert of("layernorm-post-instead-of-pre", formulas) == []


# --- Masks -----------------------------------------------------------------------------------

NUMPY_MASK = """
import numpy as np
def attend(s):
    t = s.shape[-1]
    keep = np.tril(np.ones((t, t), dtype=bool))
    return np.where(keep, s, -np.inf)
"""
TORCH_MASK = """
import torch
def attend(s):
    t = s.shape[-1]
    hide = torch.ones(t, t, dtype=torch.bool).tril().logical_not()
    return s.masked_fill(hide, float('-inf'))
"""
FLAX_MASK = """
import flax.linen as nn
import jax.numpy as jnp
class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        causal = jnp.tril(jnp.ones((x.shape[0], x.shape[0])))
        return nn.MultiHeadDotProductAttention(num_heads=2)(x, mask=causal)
"""
S = RNG.standard_normal((4, 4))


def test_mask_operators_numpy_behaviour():
    lower = np.tril(np.ones((4, 4), dtype=bool))
    assert np.array_equal(run(one("mask-dropped", NUMPY_MASK), "attend", S), S)
    inverted = run(one("mask-inverted", NUMPY_MASK), "attend", S)
    assert np.array_equal(inverted, np.where(lower, -np.inf, S))
    shifted = run(one("mask-shifted", NUMPY_MASK), "attend", S)
    assert np.isneginf(np.diag(shifted)).all() and np.array_equal(shifted[1, :1], S[1, :1])
    zero = run(one("mask-filled-with-zero", NUMPY_MASK), "attend", S)
    assert np.array_equal(zero, np.where(lower, S, 0.0))


@pytest.mark.parametrize(("operator", "source", "needle"), [
    ("mask-dropped", TORCH_MASK, "return s\n"),
    ("mask-inverted", TORCH_MASK, "s.masked_fill(hide == 0, float('-inf'))"),
    ("mask-shifted", TORCH_MASK, ".tril(-1).logical_not()"),
    ("mask-filled-with-zero", TORCH_MASK, "s.masked_fill(hide, 0.0)"),
    ("mask-dropped", FLAX_MASK, "nn.MultiHeadDotProductAttention(num_heads=2)(x)\n"),
    ("mask-inverted", FLAX_MASK, "(x, mask=causal == 0)"),
    ("mask-shifted", FLAX_MASK, "jnp.tril(jnp.ones((x.shape[0], x.shape[0])), -1)"),
    ("mask-dropped", NUMPY_MASK.replace("np.", "jnp.").replace("numpy as np", "jax.numpy as jnp"),
     "return s\n"),
    ("mask-inverted", NUMPY_MASK.replace("np.", "jnp.").replace("numpy as np", "jax.numpy as jnp"),
     "jnp.where(keep, -jnp.inf, s)"),
    ("mask-filled-with-zero", "import jax.numpy as jnp\ndef f(m, s):\n"
     "    return jnp.where(m, s, jnp.finfo(s.dtype).min)\n", "jnp.where(m, s, 0.0)"),
    ("mask-shifted", "import torch\ndef f(s, t):\n"
     "    return s + torch.triu(torch.full((t, t), float('-inf')), diagonal=1)\n",
     "torch.triu(torch.full((t, t), float('-inf')), diagonal=0)"),
    ("mask-dropped", "import torch\ndef f(s, t):\n"
     "    return s + torch.triu(torch.full((t, t), float('-inf')), diagonal=1)\n", "return s\n"),
    ("mask-after-softmax", "import torch\ndef f(s, m):\n"
     "    s = s.masked_fill(m, float('-inf'))\n    return torch.softmax(s, dim=-1)\n",
     "return torch.softmax(s, dim=-1).masked_fill(m, 0.0)"),
    ("mask-moved", "import torch.nn.functional as F\ndef attn(q, kv, m):\n"
     "    return F.scaled_dot_product_attention(q, kv, kv, attn_mask=m)\n"
     "def f(x, mem, causal, pad):\n    return attn(attn(x, x, causal), mem, pad)\n",
     "attn(attn(x, x, pad), mem, causal)"),
])
def test_mask_operators_in_other_frameworks(operator: str, source: str, needle: str | None):
    if needle is None:  # recognised only through `where`: no mutant rather than a guess
        assert of(operator, source) == []
    else:
        assert needle in one(operator, source)


def test_mask_passed_by_name_or_flag_is_dropped_per_call():
    calls = """
    import numpy as np
    def attention(q, kv, allowed=None, causal=False):
        s = q @ kv.T
        if allowed is not None:
            s = np.where(allowed, s, -np.inf)
        return np.exp(s)
    def masked(q, kv, keep):
        return np.exp(np.where(keep, q @ kv.T, -np.inf))
    def block(x, memory, pad):
        return attention(x, x, causal=True) + attention(x, memory, pad) + masked(x, x, pad)
    """
    dropped = [m.source for m in of("mask-dropped", calls)]
    assert any("attention(x, x, causal=False)" in s for s in dropped)
    assert any("attention(x, memory, None)" in s for s in dropped)  # it asks `is None`
    assert any("masked(x, x, True)" in s for s in dropped)  # where(True, s, -inf) is s
    shifted = "import numpy as np\ndef m(t):\n    return np.arange(t)[:, None] >= np.arange(t)\n"
    assert "np.arange(t)[:, None] > np.arange(t)" in one("mask-shifted", shifted)


def test_mask_after_softmax():
    source = """
    import numpy as np
    def softmax(s):
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    def weights(s):
        keep = np.tril(np.ones(s.shape, dtype=bool))
        s = np.where(keep, s, -np.inf)
        return softmax(s)
    """
    got = run(one("mask-after-softmax", source), "weights", S)
    assert np.allclose(got, np.tril(_softmax(S)))  # rows no longer sum to one
    jax_inline = ("import jax, jax.numpy as jnp\ndef w(m, s):\n"
                  "    return jax.nn.softmax(jnp.where(m, s, -jnp.inf), axis=-1)\n")
    assert "jnp.where(m, jax.nn.softmax(s, axis=-1), 0.0)" in one("mask-after-softmax",
                                                                   jax_inline)
    flax = one("mask-after-softmax", FLAX_MASK)
    assert "attention_fn=lambda q, k, v, mask=None:" in flax and "(1 if mask is None else mask)" \
        in flax
    # Masked scores replaced before any softmax reads them: no mutant, not a wrong one.
    overwritten = source.replace("        return softmax(s)",
                                 "        s = -s\n        return softmax(s)")
    assert of("mask-after-softmax", overwritten) == []


GUARDED = {
    "numpy": """
    import numpy as np
    def softmax(s):
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    def weights(s, causal):
        if causal:
            tq, tk = s.shape
            allowed = np.tril(np.ones((tq, tk), dtype=bool))
            s = np.where(allowed, s, -np.inf)
        return softmax(s) * 1.0
    """,
    "jax": """
    import jax, jax.numpy as jnp
    def weights(s, causal):
        if causal:
            s = jnp.where(jnp.tril(jnp.ones(s.shape, dtype=bool)), s, -jnp.inf)
        a = jax.nn.softmax(s, axis=-1)
        return a
    """,
    "torch": """
    import torch
    def weights(s, causal):
        if causal:
            s = s.masked_fill(torch.ones(s.shape, dtype=torch.bool).triu(1), float('-inf'))
        return torch.softmax(s, dim=-1)
    """,
}


@pytest.mark.parametrize("framework", sorted(GUARDED))
def test_mask_after_softmax_under_an_if(framework: str):
    """`if mask is not None: s = where(mask, s, -inf)`, the softmax after the `if`: the mask
    is kept where the `if` makes it and zeroes the weights only when it was made."""
    mutated = one("mask-after-softmax", GUARDED[framework])
    assert "_mask_after_softmax = None\n" in mutated
    if framework != "numpy":
        zeroed = {"jax": "jnp.where(_mask_after_softmax, jax.nn.softmax(s, axis=-1), 0.0)",
                  "torch": "torch.softmax(s, dim=-1).masked_fill(_mask_after_softmax, 0.0)"}
        assert f"if _mask_after_softmax is None else {zeroed[framework]}" in mutated
        return
    lower = np.tril(np.ones((4, 4), dtype=bool))
    assert np.allclose(run(mutated, "weights", S, True), np.where(lower, _softmax(S), 0.0))
    assert np.allclose(run(mutated, "weights", S, False), _softmax(S))


def test_mask_moved_to_the_next_attention():
    ed_style = """
    import numpy as np
    def mha(q, kv, causal=False):
        s = q @ kv.T
        if causal:
            s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
        return np.exp(s) @ kv
    def block(y, x):
        y = y + mha(y, y, causal=True)
        return y + mha(y, x)
    """
    moved = one("mask-moved", ed_style)
    assert "y + mha(y, y, causal=False)" in moved and "y + mha(y, x, causal=True)" in moved
    y, x = RNG.standard_normal((3, 4)) / 4, RNG.standard_normal((5, 4)) / 4
    first = y + np.exp(y @ y.T) @ y
    causal = np.tril(np.ones((3, 5), bool))
    second = first + np.exp(np.where(causal, first @ x.T, -np.inf)) @ x
    assert np.allclose(run(moved, "block", y, x), second)
    flax = FLAX_MASK.replace("(x, mask=causal)", "(x, mask=causal)\n"
                             "        return nn.MultiHeadDotProductAttention(num_heads=2)(x, y)")
    flax = flax.replace("def __call__(self, x)", "def __call__(self, x, y)")
    flax_moved = one("mask-moved", flax)
    assert "(num_heads=2)(x)\n" in flax_moved and "(x, y, mask=causal)" in flax_moved
    assert of("mask-moved", FLAX_MASK) == []  # one attention: nowhere to move to


def test_no_mask_no_mask_mutant():
    unmasked = "import numpy as np\ndef f(s, m):\n    return np.where(m > 0, s, 0.0)\n"
    for name in ("mask-dropped", "mask-inverted", "mask-shifted", "mask-filled-with-zero",
                 "mask-after-softmax", "mask-moved"):
        assert of(name, unmasked) == []


# --- Score scale and softmax -----------------------------------------------------------------

NUMPY_ATTENTION = """
import numpy as np
def softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)
def scores(q, k, num_heads):
    d_k = q.shape[-1]
    return softmax(q @ k.T / np.sqrt(d_k))
"""
Q, K = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4))


def _softmax(s: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(("operator", "divisor"), [
    ("scale-dropped", 1.0), ("scale-by-sqrt-d-model", math.sqrt(4 * 3)),
    ("scale-by-d-model", 4.0 * 3),
])
def test_scale_operators_numpy(operator: str, divisor: float):
    got = run(one(operator, NUMPY_ATTENTION), "scores", Q, K, 3)
    assert np.allclose(got, _softmax(Q @ K.T / divisor))


def test_softmax_operators_numpy():
    other = run(one("softmax-axis", NUMPY_ATTENTION), "scores", Q, K, 3)
    assert np.allclose(other, _softmax(Q @ K.T / 2.0, axis=0))
    naive = one("softmax-without-max", NUMPY_ATTENTION)
    assert "s = s\n" in naive
    with np.errstate(over="ignore", invalid="ignore"):
        huge = run(naive, "scores", Q * 400, K * 400, 3)
    assert not np.isfinite(huge).all()


@pytest.mark.parametrize(("operator", "source", "needle"), [
    ("scale-dropped", "import jax.numpy as jnp\ndef f(q, k, H):\n"
     "    return q @ k.T / jnp.sqrt(jnp.float32(q.shape[-1]))\n", "return q @ k.T\n"),
    ("scale-by-sqrt-d-model", "import math\nimport torch.nn.functional as F\n"
     "def f(q, k, v, d, heads):\n"
     "    return F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(d // heads))\n",
     "scale=1 / math.sqrt(d // heads * heads)"),
    ("scale-dropped", "import torch.nn.functional as F\ndef f(q, k, v):\n"
     "    return F.scaled_dot_product_attention(q, k, v)\n", "(q, k, v, scale=1.0)"),
    ("softmax-axis", "import jax\ndef f(s):\n    return jax.nn.softmax(s)\n",
     "jax.nn.softmax(s, axis=-2)"),
    ("softmax-axis", "import torch.nn.functional as F\ndef f(s):\n"
     "    return F.softmax(s, dim=-1)\n", "F.softmax(s, dim=-2)"),
    ("softmax-without-max", "import torch.nn.functional as F\ndef f(s):\n"
     "    return F.softmax(s, dim=-1)\n",
     "(lambda _s: torch.exp(_s) / torch.exp(_s).sum(dim=-1, keepdim=True))(s)"),
    ("softmax-without-max", "import jax\ndef f(s):\n    return jax.nn.softmax(s, axis=-1)\n",
     "jax.numpy.exp(_s) / jax.numpy.exp(_s).sum(axis=-1, keepdims=True)"),
])
def test_scale_and_softmax_in_other_frameworks(operator: str, source: str, needle: str):
    mutated = one(operator, source)
    assert needle in mutated
    if "torch.exp" in needle:
        assert mutated.startswith("import torch\n")  # the mutant imports what it calls


@pytest.mark.parametrize(("operator", "needle"), [
    ("scale-dropped", "dot_product_attention(q * jax.numpy.sqrt(q.shape[-1])"),
    ("scale-by-sqrt-d-model", "q * (1 / jax.numpy.sqrt(q.shape[-2]))"),
    ("scale-by-d-model", "(q.shape[-1] * q.shape[-2])"),
    ("softmax-axis", "jax.nn.softmax(jax.numpy.where("),
    ("softmax-without-max", "(lambda e: e / e.sum(-1, keepdims=True))(jax.numpy.exp("),
])
def test_flax_attention_reached_through_attention_fn(operator: str, needle: str):
    mutated = one(operator, FLAX_MASK)
    assert "MultiHeadDotProductAttention(num_heads=2, attention_fn=lambda q, k, v, mask=None:" \
        in mutated and needle in mutated and "import flax.linen\n" in mutated


def test_flax_attention_fn_computes_the_mistake():
    """The Flax lambdas are written for (..., length, heads, d_k): checked in NumPy."""
    from judge.mutants.flax_attention import SOFTMAXES
    q, k = RNG.standard_normal((5, 2, 3)), RNG.standard_normal((5, 2, 3))
    weights = SOFTMAXES["other-axis"].replace("jax.numpy", "np").replace("jax.nn.softmax", "sm")
    namespace = {"np": np, "q": q, "k": k, "mask": None, "sm": _softmax}
    got = eval(weights, namespace)
    want = _softmax(np.einsum("qhd,khd->hqk", q / np.sqrt(3), k), axis=-2)
    assert np.allclose(got, want)


def test_scale_and_softmax_leave_other_code_alone():
    other = """
    import numpy as np
    def f(x, var, eps):
        c = np.sqrt(2.0 / np.pi)
        return c * x / np.sqrt(var + eps) + np.exp(x).max(axis=-1)
    """
    for name in ("scale-dropped", "scale-by-sqrt-d-model", "scale-by-d-model",
                 "softmax-axis", "softmax-without-max"):
        assert of(name, other) == []
    # No heads in scope: no d_model to scale by.
    assert of("scale-by-d-model", "import numpy as np\ndef f(q, k):\n"
                                  "    return q @ k.T / np.sqrt(q.shape[-1])\n") == []


# --- Activations and biases ------------------------------------------------------------------

H = np.linspace(-3, 3, 13)
GELU_TANH = 0.5 * H * (1 + np.tanh(math.sqrt(2 / math.pi) * (H + 0.044715 * H**3)))
GELU_ERF = 0.5 * H * (1 + np.vectorize(math.erf)(H / math.sqrt(2)))
ACTIVATIONS = {"relu": np.maximum(H, 0), "gelu-tanh": GELU_TANH, "gelu-erf": GELU_ERF,
               "silu": H / (1 + np.exp(-H))}
NUMPY_WRITTEN = {
    "relu": "np.maximum(h, 0)",
    "gelu-tanh": "0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))",
    "gelu-erf": "0.5 * h * (1 + erf(h / np.sqrt(2)))",
}


@pytest.mark.parametrize(("have", "want"), [(h, w) for h in sorted(NUMPY_WRITTEN)
                                             for w in sorted(ACTIVATIONS) if h != w])
def test_activation_swaps_numpy(have: str, want: str):
    source = ("import numpy as np\nfrom math import erf\nerf = np.vectorize(erf)\n"
              f"def act(h):\n    return {NUMPY_WRITTEN[have]}\n")
    assert np.allclose(run(source, "act", H), ACTIVATIONS[have])
    got = run(one(f"activation-{want}-for-{have}", source), "act", H)
    assert np.allclose(got, ACTIVATIONS[want])
    assert of(f"activation-{have}-for-{want}", source) == []  # not what is there


@pytest.mark.parametrize(("source", "have", "needles"), [
    ("import jax\ndef f(h):\n    return jax.nn.gelu(h)\n", "gelu-tanh",
     {"relu": "jax.nn.relu(h)", "gelu-erf": "jax.nn.gelu(h, approximate=False)"}),
    ("import torch.nn.functional as F\ndef f(h):\n    return F.gelu(h)\n", "gelu-erf",
     {"gelu-tanh": "torch.nn.functional.gelu(h, approximate='tanh')",
      "silu": "torch.nn.functional.silu(h)"}),
    ("import torch\ndef f(h):\n    return h.clamp(min=0)\n", "relu",
     {"gelu-erf": "torch.nn.functional.gelu(h)"}),
    ("import flax.linen as nn\ndef f(h):\n    return nn.relu(h)\n", "relu",
     {"gelu-tanh": "jax.nn.gelu(h, approximate=True)", "silu": "jax.nn.silu(h)"}),
    ("import jax\ndef f(h):\n    return jax.nn.silu(h)\n", "silu",
     {"relu": "jax.nn.relu(h)", "gelu-tanh": "jax.nn.gelu(h, approximate=True)",
      "gelu-erf": "jax.nn.gelu(h, approximate=False)"}),
    ("import torch.nn.functional as F\ndef f(h):\n    return F.silu(h)\n", "silu",
     {"relu": "torch.relu(h)"}),
])
def test_activation_swaps_in_other_frameworks(source: str, have: str, needles: dict[str, str]):
    for want, needle in needles.items():
        assert needle in one(f"activation-{want}-for-{have}", source)
    assert len([m for m in mutants(source) if m.operator.family == "activation"]) == 3


def test_no_activation_no_swap():
    plain = "import numpy as np\ndef f(h):\n    return np.maximum(h, 1) + np.tanh(h)\n"
    assert [m for m in mutants(plain) if m.operator.family == "activation"] == []


@pytest.mark.parametrize(("source", "needle"), [
    ("import numpy as np\ndef f(x, w, b):\n    return x @ w + b\n", "return x @ w\n"),
    ("import jax.numpy as jnp\ndef f(x, w, p):\n"
     "    return jnp.einsum('td,de->te', x, w) + p['b']\n",
     "return jnp.einsum('td,de->te', x, w)\n"),
    ("import torch.nn.functional as F\ndef f(x, w, b):\n    return F.linear(x, w, b)\n",
     "return F.linear(x, w)\n"),
    ("import flax.linen as nn\ndef f(x):\n    return nn.Dense(4)(x)\n",
     "nn.Dense(4, use_bias=False)(x)"),
])
def test_bias_dropped(source: str, needle: str):
    assert needle in one("bias-dropped", source)


def test_a_residual_is_not_a_bias():
    residual = "import numpy as np\ndef f(x, w):\n    return x + np.tanh(x) @ w\n"
    assert of("bias-dropped", residual) == []
    assert of("bias-dropped", "import numpy as np\ndef f(x, b):\n    return x + b\n") == []


# --- Wiring: attention inputs, weight slots, order, heads, positions ---------------------------

NUMPY_DECODER = """
import numpy as np
def attention(q_in, kv_in, w):
    s = (q_in @ w[0]) @ (kv_in @ w[1]).T
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ (kv_in @ w[2])
def norm(z):
    return (z - z.mean(-1, keepdims=True)) / np.sqrt(z.var(-1, keepdims=True) + 1e-5)
def decoder(y, memory, blk):
    y = norm(y + attention(y, y, blk[0:3]))
    y = norm(y + attention(y, memory, blk[3:6]))
    return y
"""


def test_attention_inputs_swapped_numpy():
    kv = one("keys-values-from-queries", NUMPY_DECODER)
    assert "attention(y, y, blk[3:6])" in kv and "attention(y, y, blk[0:3])" in kv
    assert "attention(memory, memory, blk[3:6])" in one("queries-from-keys-values",
                                                         NUMPY_DECODER)


def test_attention_inputs_swapped_torch():
    torch = """
    import torch.nn.functional as F
    def attn(q_in, kv_in, w):
        return F.scaled_dot_product_attention(q_in @ w, kv_in @ w, kv_in @ w)
    def f(x, mem, w):
        return attn(x, mem, w) + attn(x, x, w)
    """
    assert "return attn(x, x, w) + attn(x, x, w)" in one("keys-values-from-queries", torch)
    assert "return attn(mem, mem, w) + attn(x, x, w)" in one("queries-from-keys-values", torch)


def test_attention_inputs_swapped_flax():
    cross = """
    import flax.linen as nn
    class Block(nn.Module):
        @nn.compact
        def __call__(self, q, kv):
            return nn.MultiHeadDotProductAttention(num_heads=2)(q, kv)
    """
    assert "(num_heads=2)(q, q)" in one("keys-values-from-queries", cross)
    assert "(num_heads=2)(kv, kv)" in one("queries-from-keys-values", cross)
    self_only = cross.replace("(q, kv)", "(q)")
    assert of("keys-values-from-queries", self_only) == []


def test_weight_slots_swapped_between_and_within_sub_layers():
    swapped = [m.source for m in of("weight-slots-swapped", NUMPY_DECODER)]
    assert any("attention(y, y, blk[3:6])" in s and "attention(y, memory, blk[0:3])" in s
               for s in swapped)
    within = "import numpy as np\ndef f(x, blk):\n    return np.tanh(x @ blk[0]) @ blk[1]\n"
    assert of("weight-slots-swapped", within) == []  # not the arguments of one call
    calls = "def f(g, x, blk):\n    return g(x, blk[0], blk[1], blk[2])\n"
    found = [m.source for m in of("weight-slots-swapped", calls)]
    assert "g(x, blk[1], blk[0], blk[2])" in found[0] and len(found) == 2


def test_sub_layers_reordered():
    moved = one("sublayers-reordered", NUMPY_DECODER)
    assert moved.index("blk[3:6]") < moved.index("blk[0:3]")
    helpers = """
    import numpy as np
    def block(x, w):
        f = lambda i: np.tanh(x @ w[i])
        x = x + f(0) @ w[1]
        x = x + f(2) @ w[3]
        return x
    """
    kept = one("sublayers-reordered", helpers)  # the helper both use stays in front
    assert kept.index("f = lambda") < kept.index("f(2)") < kept.index("f(0)")
    flax = one("sublayers-reordered", FLAX_PRE_LN)
    assert flax.index("nn.Dense") < flax.index("MultiHeadDotProductAttention")
    assert flax.rstrip().endswith("return x")


def test_head_layout():
    numpy = "def merge(c, n, t):\n    return c.transpose(0, 2, 1, 3).reshape(n, t, -1)\n"
    assert "return c.reshape(n, t, -1)" in one("head-axis-not-moved", numpy)
    torch = "def split(x, b, t, h):\n    return x.view(b, t, h, -1).transpose(1, 2)\n"
    assert "return x.view(b, t, h, -1)\n" in one("head-axis-not-moved", torch)
    assert of("head-axis-not-moved", "def f(k):\n    return k.transpose(0, 1, 3, 2)\n") == []


def test_attention_reads_earlier_value():
    source = NUMPY_DECODER + """
def decoder_post(tgt, memory, blk):
    x1 = norm(tgt + attention(tgt, tgt, blk[0:3]))
    return norm(x1 + attention(x1, memory, blk[3:6]))
"""
    assert "x1 + attention(tgt, memory, blk[3:6])" in one("attention-reads-earlier-value", source)
    jax_source = source.replace("import numpy as np", "import jax.numpy as np")
    assert len(of("attention-reads-earlier-value", jax_source)) == 1
    assert of("attention-reads-earlier-value", NUMPY_DECODER) == []  # one stream name


def test_heads_interleaved():
    split = ("def split(t, num_heads):\n    n, d = t.shape\n"
             "    return t.reshape(n, num_heads, d // num_heads)\n")
    t = np.arange(12.0).reshape(1, 12)
    assert run(split, "split", t, 3)[0, 1].tolist() == [4.0, 5.0, 6.0, 7.0]
    got = run(one("heads-interleaved", split), "split", t, 3)
    assert got[0, 1].tolist() == [1.0, 4.0, 7.0, 10.0]  # features h, h + H, h + 2H...
    torch = "def f(x, B, T, H, D):\n    return x.view(B, T, H, D // H).transpose(1, 2)\n"
    assert "x.view(B, T, D // H, H).swapaxes(-1, -2).transpose(1, 2)" in one(
        "heads-interleaved", torch)
    assert of("heads-interleaved", "def f(x, n):\n    return x.reshape(n, 4, 2)\n") == []


def test_position_terms_swapped():
    numpy = ("def f(se, te, si, ti, enc_pos, dec_pos):\n"
             "    return se[si] + enc_pos, te[ti] + dec_pos\n")
    swapped = [m.source for m in of("position-terms-swapped", numpy)]
    assert len(swapped) == 2 and "se[si] + dec_pos, te[ti] + dec_pos" in swapped[0]
    assert "se[si] + enc_pos, te[ti] + enc_pos" in swapped[1]
    torch = ("import torch.nn.functional as F\ndef f(ids, emb, pos):\n"
             "    return F.embedding(ids, emb) + pos\n")
    assert of("position-terms-swapped", torch) == []  # one side only


def test_position_term_dropped():
    numpy = "def f(emb, ids, pos_embed):\n    return emb[ids] + pos_embed\n"
    assert "return emb[ids]\n" in one("position-term-dropped", numpy)
    torch = ("import torch.nn.functional as F\ndef f(ids, emb, pos):\n"
             "    return F.embedding(ids, emb) + pos\n")
    assert "return F.embedding(ids, emb)\n" in one("position-term-dropped", torch)
    assert of("position-term-dropped", "def f(emb, ids, b):\n    return emb[ids] + b\n") == []


# --- Sites, the model, the enumeration ---------------------------------------------------------

LABELLED = """\
import numpy as np
def helper(x):  # site: every attention
    return x

def f(x):
    # site: the self-attention
    a = x + 1
    b = a * 2

    # site: cross-attention
    c = b - 1
    d = c  # site: the output head
    return d
y = 3
"""


def test_site_labels():
    code = Code(LABELLED)
    names = SiteNames(LABELLED, code.tree)
    assert names.name(3) == "every attention"
    assert [names.name(n) for n in (7, 8)] == ["the self-attention"] * 2
    assert names.name(11) == "the cross-attention"  # a determiner is added
    assert names.name(12) == "the output head"  # a statement's own label wins
    assert names.name(13) == "the cross-attention"
    assert names.name(14) == "line 14"
    unlabelled = "def g(x):\n    return x\n"
    assert SiteNames(unlabelled, Code(unlabelled).tree).name(2) == "`g`"


def test_mutants_are_deterministic_distinct_and_compile():
    first, second = mutants(NUMPY_DECODER), mutants(NUMPY_DECODER)
    assert [m.id for m in first] == [m.id for m in second]
    assert len({m.id for m in first}) == len(first) == len({m.source for m in first})
    assert NUMPY_DECODER not in {m.source for m in first}
    for m in first:
        compile(m.source, m.id, "exec")
        assert len(m.id) == 16 and m.title and "{site}" not in m.title
        assert m.operator.detail and m.operator.family


def test_framework_detection_and_override():
    assert detect_framework(Code(FLAX_MASK).tree) == "flax"
    assert detect_framework(Code(TORCH_MASK).tree) == "torch"
    assert detect_framework(Code(JAX_LN).tree) == "jax"
    assert detect_framework(Code(NUMPY_LN).tree) == "numpy"
    source = "import numpy as np\ndef f(h):\n    return np.maximum(h, 0)\n"
    assert "torch.relu" not in one("activation-silu-for-relu", source)
    assert "torch.nn.functional.silu" in one("activation-silu-for-relu", source, "torch")
    with pytest.raises(ValueError, match="unknown framework 'tensorflow'"):
        mutants(source, "tensorflow")


def test_a_file_without_any_pattern_gives_no_mutant():
    assert mutants("def f(a, b):\n    return a * b - 1\n") == []


# --- The four references ---------------------------------------------------------------------

SLUGS = ["encoder-block", "decoder-block-preln", "decoder-block", "encoder-decoder"]
NEEDED = {"residual", "layernorm", "scale", "softmax", "activation"}


@pytest.mark.parametrize("slug", SLUGS)
def test_reference_mutants_cover_the_families(slug: str):
    package = load_package(ROOT / "problems" / slug, check_generator=False)
    found = mutants(package.reference_source)
    families = {m.operator.family for m in found}
    needed = NEEDED | ({"mask"} if slug != "encoder-block" else set())
    assert needed <= families, needed - families
    assert len({m.source for m in found}) == len(found)
    titles = " ".join(m.title for m in found)
    assert "`" not in titles.replace("`__call__`", ""), titles  # the labels name the sites
    site = "self-attention" if slug == "encoder-block" else "cross-attention"
    assert f"the residual around the {site} is missing" in titles


@pytest.mark.parametrize("slug", SLUGS)
def test_making_a_mutant_leaves_the_parsed_source_as_it_was(slug: str):
    """Each mutant is made from the tree as parsed, never from an earlier mutant's."""
    from judge.mutants import RULES

    source = (ROOT / "reference_solutions" / f"{slug}.py").read_text()
    code = Code(source)
    before = ast.dump(code.tree, include_attributes=True)
    made = [code.apply(site) for rule in RULES for site in rule.find(code)]
    assert made and ast.dump(code.tree, include_attributes=True) == before


def test_every_packaged_submission_gives_mutants_that_compile():
    """The operators meet code written by many hands: every file the packages hold, in every
    framework, gives mutants without an error (`mutants` compiles each one)."""
    files = sorted((ROOT / "problems").glob("*/submissions/*/*.py"))
    assert len(files) > 60
    total = 0
    for file in files:
        found = mutants(file.read_text())
        assert len({m.id for m in found}) == len(found), file
        total += len(found)
    assert total > 1000


# (problem, test): an input where every mutant shows; computed in float64, so that rounding
# does not hide a small change (a LayerNorm epsilon) nor make one up.
TYPICAL = {"decoder-block": "strong-biases", "encoder-decoder": "gelu-form"}


def _equivalent(mutant: Mutant) -> bool:
    """Mutants that compute the same function, with the reason:
    - softmax-without-max: exp(s) / sum(exp(s)) equals the shifted form in exact arithmetic;
      it differs only where exp() overflows (the large-input tests), not on a typical input;
    - dropping the key bias: q . (k + b_k) = q . k + q . b_k adds the same number to every
      score of a query row, and a softmax does not change when its row is shifted."""
    if mutant.operator.name == "softmax-without-max":
        return True
    return mutant.operator.name == "bias-dropped" and "'bk'" not in mutant.source


def _float64(value: object) -> object:
    if isinstance(value, dict):
        return {k: _float64(v) for k, v in value.items()}
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        return value.astype(np.float64)
    return value


@pytest.mark.parametrize("slug", sorted(TYPICAL))
def test_every_numpy_reference_mutant_changes_the_output(slug: str):
    package = load_package(ROOT / "problems" / slug)
    spec = next(t for t in package.tests if t.name == TYPICAL[slug])
    inputs = {k: _float64(v) for k, v in package.generator.generate(spec.seed, **spec.params)
              .items()}
    namespace: dict[str, object] = {}

    def output(source: str) -> np.ndarray:
        namespace.clear()
        exec(compile(source, slug, "exec"), namespace)
        entry = namespace[package.entry_point]
        assert callable(entry)
        return np.asarray(entry(**inputs), dtype=np.float64)

    want = output(package.reference_source)
    found = mutants(package.reference_source)
    assert len(found) >= 30
    for mutant in found:
        try:
            with np.errstate(all="ignore"):
                got = output(mutant.source)
        except Exception:
            continue  # raising is showing
        same = got.shape == want.shape and np.allclose(got, want, rtol=1e-9, atol=1e-12)
        assert same == _equivalent(mutant), (mutant.title, mutant.source)


# --- The encoder's output as the cross-attention's memory; embedding tables -----------------

NUMPY_STACK = """
import numpy as np
def attend(q, kv):
    return q + kv.mean(axis=0)
def forward(src, tgt, enc, dec):
    x = src
    for w in enc:
        x = np.tanh(x @ w)
    y = tgt
    for w in dec:
        y = attend(y @ w, x)
    return y
"""


def test_memory_from_another_layer_numpy():
    src, tgt = RNG.standard_normal((5, 4)), RNG.standard_normal((3, 4))
    enc, dec = RNG.standard_normal((3, 4, 4)), RNG.standard_normal((2, 4, 4))

    def forward(memory: np.ndarray) -> np.ndarray:
        y = tgt
        for w in dec:
            y = y @ w + memory.mean(axis=0)
        return y

    first = run(one("memory-from-first-block", NUMPY_STACK), "forward", src, tgt, enc, dec)
    assert np.allclose(first, forward(np.tanh(src @ enc[0])))
    embedded = run(one("memory-from-encoder-input", NUMPY_STACK), "forward", src, tgt, enc, dec)
    assert np.allclose(embedded, forward(src))
    last = np.tanh(np.tanh(np.tanh(src @ enc[0]) @ enc[1]) @ enc[2])
    assert np.allclose(run(NUMPY_STACK, "forward", src, tgt, enc, dec), forward(last))


@pytest.mark.parametrize(("source", "needle"), [
    (NUMPY_STACK.replace("import numpy as np", "import jax.numpy as np"),
     "y = attend(y @ w, _memories[0])"),
    ("""
import torch.nn as nn
def forward(x, y, enc, dec):
    for w in enc:
        x = nn.TransformerEncoderLayer(8, 2)(x)
    for w in dec:
        y = nn.TransformerDecoderLayer(8, 2)(y, x, tgt_is_causal=True)
    return y
""", "nn.TransformerDecoderLayer(8, 2)(y, _memories[0], tgt_is_causal=True)"),
    ("""
import flax.linen as nn
class Model(nn.Module):
    @nn.compact
    def __call__(self, x, y):
        for _ in range(3):
            x = Encoder()(x)
        for _ in range(2):
            y = Decoder()(y, memory=x)
        return y
""", "y = Decoder()(y, memory=_memories[0])"),
])
def test_memory_from_another_layer_in_other_frameworks(source: str, needle: str):
    first = one("memory-from-first-block", source)
    assert needle in first and "_memories = []" in first and "_memories.append(x)" in first
    assert "_memories = [x]" in one("memory-from-encoder-input", source)


def test_memory_needs_a_stack_read_by_another_loop():
    decoder_only = """
    import numpy as np
    def forward(x, blocks):
        for w in blocks:
            x = np.tanh(x @ w)
        return np.maximum(x, 0)
    """
    assert of("memory-from-first-block", decoder_only) == []
    scanned = "import jax\ndef f(step, x, enc, dec, g):\n    x, _ = jax.lax.scan(step, x, enc)\n" \
              "    for w in dec:\n        g = g(g, x)\n    return g\n"
    assert of("memory-from-first-block", scanned) == []  # no loop of the file's own: no guess


@pytest.mark.parametrize(("source", "needles"), [
    ("def f(se, te, si, ti, enc_pos, dec_pos):\n"
     "    return se[si] + enc_pos, te[ti] + dec_pos\n",
     ["return (te[si] + enc_pos, te[ti] + dec_pos)",
      "return (se[si] + enc_pos, se[ti] + dec_pos)"]),
    ("import torch.nn.functional as F\ndef f(si, ti, se, te, enc_pos, dec_pos):\n"
     "    x = F.embedding(si, se)\n    x = x + enc_pos\n    y = F.embedding(ti, te)\n"
     "    return x, y + dec_pos\n", ["x = F.embedding(si, te)", "y = F.embedding(ti, se)"]),
    ("import jax.numpy as jnp\ndef f(si, ti, se, te, pos_s, pos_t):\n"
     "    return jnp.take(se, si, axis=0) + pos_s, jnp.take(te, ti, axis=0) + pos_t\n",
     ["jnp.take(te, si, axis=0) + pos_s", "jnp.take(se, ti, axis=0) + pos_t"]),
])
def test_embedding_tables_swapped(source: str, needles: list[str]):
    found = [m.source for m in of("embedding-tables-swapped", source)]
    assert len(found) == 2 and all(n in s for n, s in zip(needles, found, strict=True))


def test_embedding_tables_swapped_numpy_behaviour_and_flax_left_alone():
    se, te = RNG.standard_normal((6, 4)), RNG.standard_normal((6, 4))
    si, ti = np.array([0, 5, 2]), np.array([1, 1])
    pe, pd = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))
    source = "def f(se, te, si, ti, enc_pos, dec_pos):\n" \
             "    return se[si] + enc_pos, te[ti] + dec_pos\n"
    _, dec = of("embedding-tables-swapped", source)
    namespace: dict[str, object] = {}
    exec(dec.source, namespace)
    _x, y = namespace["f"](se, te, si, ti, pe, pd)  # type: ignore[operator]
    assert np.allclose(y, se[ti] + pd)
    flax = "import flax.linen as nn\ndef f(ids, pos):\n    return nn.Embed(9, 4)(ids) + pos\n"
    assert of("embedding-tables-swapped", flax) == []  # the table is the module's own
    assert "return nn.Embed(9, 4)(ids)\n" in one("position-term-dropped", flax)
