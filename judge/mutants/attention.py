"""Attention scores: their scale, and the softmax over them."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from judge.mutants import flax_attention, masks
from judge.mutants.code import (
    Code,
    Rule,
    Site,
    call_name,
    constant,
    expr,
    framework_function,
    keyword,
)
from judge.mutants.model import Operator

# What a file calls the number of heads (a parameter of the function around the scale).
HEADS = ("num_heads", "n_heads", "heads", "nhead", "n_head", "num_head", "H")
REDUCTIONS = ("max", "amax", "sum", "logsumexp")


def _score_scales(code: Code) -> Iterator[tuple[ast.BinOp, ast.Call]]:
    """s / sqrt(d_k), through casts: the division and the square root."""
    for node in code.nodes(ast.BinOp):
        if not isinstance(node.op, ast.Div):
            continue
        root = next((n for n in ast.walk(node.right) if call_name(n) == "sqrt"), None)
        if not isinstance(root, ast.Call) or len(root.args) != 1:
            continue
        arg = root.args[0]
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add) for n in ast.walk(arg)) \
                or "pi" in ast.unparse(arg) or constant(arg) is not None:
            continue  # sqrt(var + eps) of a LayerNorm, sqrt(2 / pi) of a GELU
        yield node, root


def _scale_dropped(code: Code) -> Iterator[Site]:
    for node, _ in _score_scales(code):
        yield Site(node, [(node, node.left)])
    for call in code.calls("scaled_dot_product_attention", "dot_product_attention"):
        if keyword(call, "scale") is None:
            keywords = [*call.keywords, ast.keyword("scale", ast.Constant(1.0))]
            yield Site(call, [(call, ast.Call(call.func, call.args, keywords))])
    yield from flax_attention.with_attention_fn(
        code, flax_attention.scaled(flax_attention.SCALES["none"]))


def _heads(code: Code, node: ast.AST) -> str | None:
    names = code.scope_names(node)
    return next((h for h in HEADS if h in names), None)


def _scale_d_model(code: Code, root_kept: bool) -> Iterator[Site]:
    for node, root in _score_scales(code):
        heads = _heads(code, node)
        if heads is None:
            continue
        d_model = ast.BinOp(root.args[0], ast.Mult(), ast.Name(heads, ast.Load()))
        new: ast.expr = ast.Call(root.func, [d_model], [])
        if not root_kept:  # sqrt(d_model) ** 2 keeps the type sqrt gave (`.astype` may follow)
            new = ast.BinOp(new, ast.Pow(), ast.Constant(2))
        yield Site(node, [(root, new)])
    factor = flax_attention.SCALES["sqrt-d-model" if root_kept else "d-model"]
    yield from flax_attention.with_attention_fn(code, flax_attention.scaled(factor))


def _softmax_calls(code: Code) -> Iterator[tuple[ast.Call, ast.expr, ast.keyword | int | None]]:
    """A library softmax: the call, its input, where its axis is (None: the default, -1)."""
    for call in code.calls("softmax"):
        if call_name(call) in code.functions:
            continue
        method = isinstance(call.func, ast.Attribute) and not code.is_module(call.func.value)
        data = call.func.value if method and isinstance(call.func, ast.Attribute) else (
            call.args[0] if call.args else None)
        if data is None:
            continue
        at = 0 if method else 1
        axis: ast.keyword | int | None = keyword(call, "axis", "dim")
        if axis is None and len(call.args) > at:
            axis = at
        yield call, data, axis


def _other_axis(node: ast.expr) -> ast.expr | None:
    value = constant(node)
    if value is None:
        return None
    return ast.Constant(int(value) - 1 if value > 0 else -2 if value == -1 else -1)


def _handwritten_softmaxes(code: Code) -> Iterator[tuple[ast.AST, list[ast.Call]]]:
    """A function that exponentiates and reduces: its reductions over a given axis."""
    for func in code.functions.values():
        if not any(call_name(n) == "exp" for n in ast.walk(func)):
            continue
        reductions = [n for n in ast.walk(func) if call_name(n) in REDUCTIONS
                      and isinstance(n, ast.Call) and _reduction_axis(code, n) is not None]
        if reductions and any(call_name(n) == "sum" for n in reductions):
            yield func, sorted(reductions, key=lambda n: (n.lineno, n.col_offset))


def _reduction_axis(code: Code, call: ast.Call) -> ast.keyword | int | None:
    """Where a reduction's axis is, when it is a number: s.max(-1), np.sum(e, axis=3)..."""
    axis = keyword(call, "axis", "dim")
    if axis is not None:
        return axis if constant(axis.value) is not None else None
    method = isinstance(call.func, ast.Attribute) and not code.is_module(call.func.value)
    at = 0 if method else 1
    return at if len(call.args) > at and constant(call.args[at]) is not None else None


def _with_axis(call: ast.Call, axis: ast.keyword | int | None, word: str) -> ast.Call | None:
    args, keywords = list(call.args), list(call.keywords)
    new: ast.expr | None
    if isinstance(axis, ast.keyword):
        new = _other_axis(axis.value)
        if new is not None:
            keywords[keywords.index(axis)] = ast.keyword(axis.arg, new)
    elif isinstance(axis, int):
        new = _other_axis(args[axis])
        args[axis] = new if new is not None else args[axis]
    else:
        new = ast.Constant(-2)
        keywords.append(ast.keyword(word, new))
    return ast.Call(call.func, args, keywords) if new is not None else None


def _softmax_axis(code: Code) -> Iterator[Site]:
    word = "dim" if code.framework == "torch" else "axis"
    for call, _data, axis in _softmax_calls(code):
        if axis is None and code.framework == "torch":
            continue  # PyTorch has no default axis to move from
        new = _with_axis(call, axis, word)
        if new is not None:
            yield Site(call, [(call, new)])
    for func, reductions in _handwritten_softmaxes(code):
        edits = [(n, _with_axis(n, _reduction_axis(code, n), word)) for n in reductions]
        yield Site(func, [(old, new) for old, new in edits if new is not None])
    yield from flax_attention.with_attention_fn(
        code, flax_attention.weighted(flax_attention.SOFTMAXES["other-axis"]))


def _max_not_subtracted(code: Code) -> Iterator[Site]:
    for node in code.nodes(ast.BinOp):
        if isinstance(node.op, ast.Sub) and any(
                call_name(n) in ("max", "amax") for n in ast.walk(node.right)):
            yield Site(node, [(node, node.left)])
    word, keep = ("dim", "keepdim") if code.framework == "torch" else ("axis", "keepdims")
    for call, data, axis in _softmax_calls(code):
        exp, module = framework_function(code.framework, "exp")
        where = "-1" if axis is None else ast.unparse(
            axis.value if isinstance(axis, ast.keyword) else call.args[axis])
        naive = expr(f"(lambda _s: {exp}(_s) / {exp}(_s).sum({word}={where}, {keep}=True))(0)")
        assert isinstance(naive, ast.Call)
        naive.args = [data]
        yield Site(call, [(call, naive)], (module,))
    yield from flax_attention.with_attention_fn(
        code, flax_attention.weighted(flax_attention.SOFTMAXES["no-max"]))


_SCORES = "The statement gives the scores as Q K^T / sqrt(d_k), d_k = D / H, the size of a head."
SCALE_DROPPED = Operator(
    "scale-dropped", "scale",
    "the attention scores of {site} are not scaled",
    "The scores are used as Q K^T without the 1/sqrt(d_k) factor: divide them by it. "
    f"{_SCORES}")
SCALE_SQRT_D_MODEL = Operator(
    "scale-by-sqrt-d-model", "scale",
    "the attention scores of {site} are divided by sqrt(d_model) instead of sqrt(d_k)",
    "The scale uses the model width, not the width of one head: use sqrt(D / H). "
    f"{_SCORES}")
SCALE_D_MODEL = Operator(
    "scale-by-d-model", "scale",
    "the attention scores of {site} are divided by d_model instead of sqrt(d_k)",
    "The scale is 1/d_model: the model width, and no square root; use 1/sqrt(D / H). "
    f"{_SCORES}")
SOFTMAX_AXIS = Operator(
    "softmax-axis", "softmax",
    "the softmax of {site} runs over the queries instead of the keys",
    "Each query's weights must sum to one over the keys (the last axis of the scores); this "
    "softmax normalises over the other axis. Normalise over the last axis; the statement "
    "says: softmax over keys.")
SOFTMAX_NAIVE = Operator(
    "softmax-without-max", "softmax",
    "the softmax of {site} does not subtract the maximum first",
    "exp() of large scores overflows in float32 (inf / inf gives NaN). Subtract each row's "
    "maximum before exp(); the statement's large inputs test this.")

RULES = [Rule(SCALE_DROPPED, _scale_dropped),
         Rule(SCALE_SQRT_D_MODEL, lambda code: _scale_d_model(code, True)),
         Rule(SCALE_D_MODEL, lambda code: _scale_d_model(code, False)),
         *masks.RULES,
         Rule(SOFTMAX_AXIS, _softmax_axis), Rule(SOFTMAX_NAIVE, _max_not_subtracted)]
