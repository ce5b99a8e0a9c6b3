"""Residual connections and where the LayerNorm sits around them (Pre-LN, Post-LN)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from judge.mutants.code import (
    Code,
    Replacement,
    Rule,
    Site,
    call_name,
    contains,
    is_negative_infinity,
    rebuilt,
)
from judge.mutants.model import STREAM, Operator

# Calls that make an expression a sub-layer (a projection, an attention) rather than a term
# of a formula: `x + h` is a residual when h is computed from x through one of these.
SUBLAYER_CALLS = {"matmul", "einsum", "dot", "tensordot", "linear", "Dense", "DenseGeneral",
                  "MultiHeadDotProductAttention", "MultiHeadAttention", "SelfAttention",
                  "scaled_dot_product_attention", "dot_product_attention"}
NORM_CALLS = {"LayerNorm", "layer_norm"}
_NORM_ATTRIBUTE = re.compile(r"(?i)^(ln|norm|layer_?norm)_?\d*$")


def base_name(node: ast.AST) -> str:
    """A callee's name without a Flax auto-name's number: `self.Dense_1(h)` -> Dense."""
    return re.sub(r"_\d+$", "", call_name(node) or "")


def submodule(node: ast.Call) -> bool:
    """A module built in `setup()` / `__init__` and applied: `self.attn(h)`."""
    return isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
        and node.func.value.id == "self"


def is_sublayer(code: Code, expr: ast.AST) -> bool:
    for n in code.expanded(expr, 6):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return True
        if isinstance(n, ast.Call) and (base_name(n) in SUBLAYER_CALLS
                                        or call_name(n) in code.functions
                                        or isinstance(n.func, ast.Call) or submodule(n)):
            return True
    return False


def residual(code: Code, node: ast.AST) -> tuple[ast.Name, ast.expr] | None:
    """`x + sublayer(...x...)` (either order): the stream `x` and the sub-layer's term."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return None
    for stream, other in ((node.left, node.right), (node.right, node.left)):
        if isinstance(stream, ast.Name) and not isinstance(other, ast.Constant) \
                and not any(is_negative_infinity(n) for n in ast.walk(other)) \
                and code.reads(other, stream.id) and is_sublayer(code, other):
            return stream, other
    return None


def residuals(code: Code) -> Iterator[tuple[ast.BinOp, ast.Name, ast.expr]]:
    for node in code.nodes(ast.BinOp):
        found = residual(code, node)
        if found is not None:
            yield node, *found


def is_norm_call(code: Code, node: ast.AST) -> bool:
    """A LayerNorm applied: `nn.LayerNorm()(x)`, `F.layer_norm(x, ...)`, or a call of a
    function of the file that normalises (its body divides by a square root)."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    name = call_name(node)
    if isinstance(node.func, ast.Call) or submodule(node):
        return base_name(node) in NORM_CALLS or bool(_NORM_ATTRIBUTE.match(name or ""))
    if name in code.functions:
        return any(call_name(n) in ("sqrt", "rsqrt") and isinstance(n, ast.Call) and n.args
                   and isinstance(n.args[0], ast.BinOp) and isinstance(n.args[0].op, ast.Add)
                   for n in ast.walk(code.functions[name]))
    return name in NORM_CALLS


def _dropped(code: Code) -> Iterator[Site]:
    for node, _stream, term in residuals(code):
        yield Site(node, [(node, term)])


def _post_to_pre(code: Code) -> Iterator[Site]:
    """LN(x + F(x)) -> x + F(LN(x)): the sub-layer's inputs are normalised instead."""
    for call in code.nodes(ast.Call):
        if not is_norm_call(code, call):
            continue
        found = residual(code, call.args[0])
        if found is None:
            continue
        stream, term = found
        inner: list[tuple[ast.AST, Replacement]] = []
        for n in code.expanded(term, 3, stop=stream.id):
            if isinstance(n, ast.Name) and n.id == stream.id and _is_operand(code, n):
                inner.append((n, ast.Call(call.func, [n, *call.args[1:]], call.keywords)))
        if not inner:
            continue
        nested = [e for e in inner if contains(call.args[0], e[0])]
        outside = [e for e in inner if not contains(call.args[0], e[0])]
        yield Site(call, [(call, rebuilt(call.args[0], nested)), *outside])


def _is_operand(code: Code, name: ast.Name) -> bool:
    """An argument of a call or a factor of a matrix product (not `x.shape`, `x.dtype`)."""
    up = code.parent.get(id(name))
    if isinstance(up, ast.Call):
        return name in up.args
    return isinstance(up, ast.BinOp) and isinstance(up.op, ast.MatMult)


def _pre_to_post(code: Code) -> Iterator[Site]:
    """x + F(LN(x)) -> LN(x + F(x)): the LayerNorm moves from the input to the sum."""
    for node, stream, term in residuals(code):
        norms = [n for n in code.expanded(term, 6, stop=stream.id)
                 if isinstance(n, ast.Call) and is_norm_call(code, n)
                 and isinstance(n.args[0], ast.Name) and n.args[0].id == stream.id]
        if len(norms) != 1:
            continue
        norm = norms[0]
        unnormed: tuple[ast.AST, Replacement] = (norm, norm.args[0])
        total = rebuilt(node, [unnormed])
        assert isinstance(total, ast.expr)
        moved = ast.Call(norm.func, [total, *norm.args[1:]], norm.keywords)
        edits: list[tuple[ast.AST, Replacement]] = [(node, moved)]
        if not contains(node, norm):
            edits.append(unnormed)
        yield Site(node, edits)


RESIDUAL_DROPPED = Operator(
    "residual-dropped", "residual",
    "the residual around {site} is missing",
    "The sub-layer's output replaces its input instead of being added to it. Add the input "
    "back (x + sublayer(x)) before going on; the statement writes every sub-layer as "
    "`x + ...`.", shows_in=(STREAM,))
POST_TO_PRE = Operator(
    "layernorm-pre-instead-of-post", "layernorm",
    "{site} normalises its input (Pre-LN) instead of the sum (Post-LN)",
    "The LayerNorm is applied to the sub-layer's input and the residual adds the raw input. "
    "This problem is Post-LN: LN(x + sublayer(x)), as the statement's formulas show.",
    shows_in=(STREAM,))
PRE_TO_POST = Operator(
    "layernorm-post-instead-of-pre", "layernorm",
    "{site} normalises the sum (Post-LN) instead of its input (Pre-LN)",
    "The LayerNorm is applied after the residual add. This problem is Pre-LN: "
    "x + sublayer(LN(x)), with the residual carrying the un-normalised x, as the statement's "
    "formulas show.", shows_in=(STREAM,))

RULES = [Rule(RESIDUAL_DROPPED, _dropped), Rule(POST_TO_PRE, _post_to_pre),
         Rule(PRE_TO_POST, _pre_to_post)]
