"""Flax's attention computes its scores and softmax inside `nn.MultiHeadDotProductAttention`;
a mutant reaches them through the module's `attention_fn`, a function of the (projected)
queries, keys and values shaped (..., length, heads, d_k)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from judge.mutants.code import Code, Site, expr, keyword

_MODULES = ("MultiHeadDotProductAttention", "MultiHeadAttention", "SelfAttention")
_IMPORTS = ("jax", "flax.linen")
# Flax scales the queries by 1/sqrt(d_k) itself: these factors undo or change that.
SCALES = {
    "none": "jax.numpy.sqrt(q.shape[-1])",
    "sqrt-d-model": "1 / jax.numpy.sqrt(q.shape[-2])",
    "d-model": "jax.numpy.sqrt(q.shape[-1]) / (q.shape[-1] * q.shape[-2])",
}
_SCORES = ("jax.numpy.where(True if mask is None else mask, jax.numpy.einsum("
           "'...qhd,...khd->...hqk', q / jax.numpy.sqrt(q.shape[-1]), k), "
           "jax.numpy.finfo(q.dtype).min)")
_UNMASKED = "jax.numpy.einsum('...qhd,...khd->...hqk', q / jax.numpy.sqrt(q.shape[-1]), k)"
SOFTMAXES = {
    "other-axis": f"jax.nn.softmax({_SCORES}, axis=-2)",
    "no-max": f"(lambda e: e / e.sum(-1, keepdims=True))(jax.numpy.exp({_SCORES}))",
    "masked-after": f"jax.nn.softmax({_UNMASKED}) * (1 if mask is None else mask)",
}


def scaled(factor: str) -> str:
    return (f"lambda q, k, v, mask=None: flax.linen.dot_product_attention(q * ({factor}), "
            "k, v, mask=mask)")


def weighted(weights: str) -> str:
    return f"lambda q, k, v, mask=None: jax.numpy.einsum('...hqk,...khd->...qhd', {weights}, v)"


def with_attention_fn(code: Code, function: str, only: ast.AST | None = None
                      ) -> Iterator[Site]:
    """Each Flax attention module built in the file (or `only` that one), given `function`
    as its attention_fn."""
    if code.framework != "flax":
        return
    for call in code.calls(*_MODULES):
        if only is not None and call is not only:
            continue
        if isinstance(call.func, ast.Attribute) and keyword(call, "attention_fn") is None:
            keywords = [*call.keywords, ast.keyword("attention_fn", expr(function))]
            yield Site(call, [(call, ast.Call(call.func, call.args, keywords))], _IMPORTS)
