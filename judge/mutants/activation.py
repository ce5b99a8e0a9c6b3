"""Activations swapped (ReLU, GELU in its tanh and erf forms, SiLU) and biases dropped."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from judge.mutants.code import Code, Rule, Site, call_name, constant, expr, keyword
from judge.mutants.model import Operator
from judge.mutants.residual import residual

WORDS = {"relu": "ReLU", "gelu-tanh": "GELU (tanh form)", "gelu-erf": "GELU (erf form)",
         "silu": "SiLU"}
# Each activation in each framework, written around X (imports needed after the text).
_WRITTEN: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "numpy": {
        "relu": ("numpy.maximum(X, 0)", ("numpy",)),
        "gelu-tanh": ("(lambda _t: 0.5 * _t * (1 + numpy.tanh(0.7978845608028654 * (_t + "
                      "0.044715 * _t ** 3))))(X)", ("numpy",)),
        "gelu-erf": ("(lambda _t: 0.5 * _t * (1 + numpy.vectorize(math.erf, otypes=[_t.dtype])"
                     "(_t / 1.4142135623730951)))(numpy.asarray(X))", ("numpy", "math")),
        "silu": ("(lambda _t: _t / (1 + numpy.exp(-_t)))(X)", ("numpy",)),
    },
    "jax": {
        "relu": ("jax.nn.relu(X)", ("jax",)),
        "gelu-tanh": ("jax.nn.gelu(X, approximate=True)", ("jax",)),
        "gelu-erf": ("jax.nn.gelu(X, approximate=False)", ("jax",)),
        "silu": ("jax.nn.silu(X)", ("jax",)),
    },
    "torch": {
        "relu": ("torch.relu(X)", ("torch",)),
        "gelu-tanh": ("torch.nn.functional.gelu(X, approximate='tanh')", ("torch",)),
        "gelu-erf": ("torch.nn.functional.gelu(X)", ("torch",)),
        "silu": ("torch.nn.functional.silu(X)", ("torch",)),
    },
}
_WRITTEN["flax"] = _WRITTEN["jax"]


class _Fill(ast.NodeTransformer):
    def __init__(self, value: ast.expr):
        self.value = value

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.value if node.id == "X" else node


def _written(framework: str, kind: str, value: ast.expr) -> tuple[ast.expr, tuple[str, ...]]:
    text, imports = _WRITTEN[framework][kind]
    filled: ast.expr = _Fill(value).visit(expr(text))
    return filled, imports


def _is_zero(node: ast.AST) -> bool:
    return constant(node) == 0


def _activations(code: Code) -> Iterator[tuple[ast.expr, ast.expr, str]]:
    """Each activation applied: the expression, its input, which activation it is."""
    for call in code.nodes(ast.Call):
        name = call_name(call)
        if name in code.functions:
            continue
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        method = receiver is not None and not code.is_module(receiver)
        data = receiver if method else (call.args[0] if call.args else None)
        if data is None:
            continue
        args = call.args if method else call.args[1:]
        if name in ("relu", "silu", "swish"):
            yield call, data, "silu" if name == "swish" else name
        elif name == "gelu":
            approx = keyword(call, "approximate")
            text = "" if approx is None else ast.unparse(approx.value)
            tanh = text in ("True", "'tanh'") or not text and code.framework in ("jax", "flax")
            yield call, data, "gelu-tanh" if tanh else "gelu-erf"
        elif _clamps_at_zero(call, name, args):
            yield call, data, "relu"
    yield from _handwritten_gelus(code)


def _clamps_at_zero(call: ast.Call, name: str | None, args: list[ast.expr]) -> bool:
    """maximum(x, 0), clip(x, 0, None), clamp(x, min=0): a ReLU written by hand."""
    if name == "maximum":
        return len(args) == 1 and _is_zero(args[0])
    min_zero = any(k.arg == "min" and _is_zero(k.value) for k in call.keywords)
    return name in ("clip", "clamp") and (bool(args) and _is_zero(args[0]) or min_zero)


def _handwritten_gelus(code: Code) -> Iterator[tuple[ast.expr, ast.expr, str]]:
    """0.5 t (1 + tanh(c (t + 0.044715 t^3))) and 0.5 t (1 + erf(t / sqrt 2)), written out."""
    for node in code.nodes(ast.BinOp):
        up = code.parent.get(id(node))
        if not isinstance(node.op, ast.Mult) or isinstance(up, ast.BinOp) and isinstance(
                up.op, ast.Mult):
            continue  # the whole product 0.5 t (1 + ...), not a part of it
        inner = [call_name(n) for n in ast.walk(node)]
        if "tanh" in inner and any(constant(n) == 0.044715 for n in ast.walk(node)):
            cubics = [n for n in ast.walk(node) if isinstance(n, ast.BinOp)
                      and isinstance(n.op, ast.Add)
                      and any(constant(m) == 0.044715 for m in ast.walk(n.right))]
            if cubics:  # the innermost: t + 0.044715 t^3
                yield node, min(cubics, key=lambda n: len(list(ast.walk(n)))).left, "gelu-tanh"
        elif "erf" in inner:
            erf = next(n for n in ast.walk(node) if call_name(n) == "erf")
            arg = erf.args[0] if isinstance(erf, ast.Call) and erf.args else None
            if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Div | ast.Mult):
                yield node, arg.left, "gelu-erf"


def _swap(have: str, want: str) -> Rule:
    def find(code: Code) -> Iterator[Site]:
        for node, data, kind in _activations(code):
            if kind == have:
                new, imports = _written(code.framework, want, data)
                yield Site(node, [(node, new)], imports)

    return Rule(Operator(
        f"activation-{want}-for-{have}", "activation",
        f"the activation in {{site}} is {WORDS[want]} instead of {WORDS[have]}",
        f"The sub-layer applies {WORDS[want]} where the statement asks for {WORDS[have]}. "
        "The two agree on some inputs and not on others; use exactly the statement's "
        "formula."), find)


def _ends_in_projection(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.MatMult):
            return True
        return isinstance(node.op, ast.Add) and _ends_in_projection(node.right)
    return call_name(node) in ("matmul", "einsum", "dot", "tensordot")


_LAYERS_WITH_BIAS = {"flax": ("Dense", "DenseGeneral", "MultiHeadDotProductAttention",
                              "MultiHeadAttention", "Conv"),
                     "torch": ("Linear", "MultiheadAttention")}


def _bias_dropped(code: Code) -> Iterator[Site]:
    for node in code.nodes(ast.BinOp):
        if not isinstance(node.op, ast.Add) or residual(code, node) is not None:
            continue
        if _ends_in_projection(node.left) and isinstance(
                node.right, ast.Name | ast.Subscript | ast.Attribute):
            yield Site(node, [(node, node.left)])
    for call in code.calls("linear"):
        if len(call.args) == 3 or keyword(call, "bias"):
            keywords = [k for k in call.keywords if k.arg != "bias"]
            yield Site(call, [(call, ast.Call(call.func, call.args[:2], keywords))])
    word = "use_bias" if code.framework == "flax" else "bias"
    for call in code.calls(*_LAYERS_WITH_BIAS.get(code.framework, ())):
        if isinstance(call.func, ast.Attribute) and keyword(call, word) is None:
            keywords = [*call.keywords, ast.keyword(word, ast.Constant(False))]
            yield Site(call, [(call, ast.Call(call.func, call.args, keywords))])


BIAS_DROPPED = Operator(
    "bias-dropped", "bias",
    "a bias in {site} is missing",
    "A linear map is computed as x @ W without its + b: add the bias. The statement lists "
    "every bias and where it is added.")

RULES = [*(_swap(have, want) for have in WORDS for want in WORDS if have != want),
         Rule(BIAS_DROPPED, _bias_dropped)]
