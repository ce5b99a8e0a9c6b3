"""The LayerNorm itself: its epsilon, its variance, its learned scale and offset."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from judge.mutants.code import Code, Rule, Site, call_name, constant, expr, keyword, same
from judge.mutants.model import Operator
from judge.mutants.residual import NORM_CALLS

SQRTS = ("sqrt", "rsqrt")
# Where a LayerNorm class keeps its epsilon, and its default, by framework.
_EPS_KEYWORD = {"flax": ("epsilon", 1e-6), "torch": ("eps", 1e-5)}


def _other_epsilon(value: float) -> float:
    """The classic confusion: 1e-5 (PyTorch, most papers) against 1e-6 (Flax)."""
    return float(f"{value / 10 if value >= 1e-5 else value * 10:.3g}")


def _epsilon_of(code: Code, node: ast.AST) -> tuple[ast.AST, float] | None:
    """The literal (or the name of a constant) an epsilon term is made of, and its value."""
    for n in ast.walk(node):
        value = constant(n) if isinstance(n, ast.Constant) else None
        if isinstance(n, ast.Name):
            value = code.constants.get(n.id, _default(code, n))
        if value is not None and 0 < value < 1e-2:
            return n, value
    return None


def _default(code: Code, name: ast.Name) -> float | None:
    """The default value of the enclosing function's parameter `name`, if a number."""
    func = code.function_of(name)
    if func is None:
        return None
    a = func.args
    positional = [*a.posonlyargs, *a.args]
    pairs = [*zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True),
             *((k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d)]
    return next((constant(d) for p, d in pairs if p.arg == name.id), None)


def _eps_sums(code: Code) -> Iterator[tuple[ast.Call, ast.expr, ast.expr, ast.AST, float]]:
    """sqrt(var + eps) / rsqrt(var + eps): the call, var, eps, eps's literal and value."""
    for call in code.calls(*SQRTS):
        if len(call.args) != 1 or not isinstance(call.args[0], ast.BinOp) \
                or not isinstance(call.args[0].op, ast.Add):
            continue
        add = call.args[0]
        for var, eps in ((add.left, add.right), (add.right, add.left)):
            found = _epsilon_of(code, eps)
            if found is not None and _epsilon_of(code, var) is None:
                yield call, var, eps, *found
                break


def _eps_changed(code: Code) -> Iterator[Site]:
    for call, _var, _eps, literal, found in _eps_sums(code):
        yield Site(call, [(literal, ast.Constant(_other_epsilon(found)))])
    if code.framework not in _EPS_KEYWORD:
        return
    word, default = _EPS_KEYWORD[code.framework]
    for call in code.calls(*NORM_CALLS):
        if call_name(call) in code.functions or isinstance(call.func, ast.Call):
            continue  # the file's own function; a Flax module applied, not built
        kw = keyword(call, word)
        value = default if kw is None else constant(kw.value)
        if value is None:
            continue
        new = ast.keyword(word, ast.Constant(_other_epsilon(value)))
        keywords = [k for k in call.keywords if k.arg != word] + [new]
        yield Site(call, [(call, ast.Call(call.func, call.args, keywords))])


def _eps_outside(code: Code) -> Iterator[Site]:
    for call, var, eps, _literal, _value in _eps_sums(code):
        root = ast.Call(call.func, [var], [])
        if call_name(call) == "rsqrt":
            if not isinstance(call.func, ast.Attribute):
                continue
            sqrt = ast.Call(ast.Attribute(call.func.value, "sqrt", ast.Load()), [var], [])
            moved: ast.expr = ast.BinOp(ast.Constant(1.0), ast.Div(),
                                        ast.BinOp(sqrt, ast.Add(), eps))
        else:
            moved = ast.BinOp(root, ast.Add(), eps)
        yield Site(call, [(call, moved)])


def _is_square(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            return constant(node.right) == 2
        return isinstance(node.op, ast.Mult) and same(node.left, node.right)
    return call_name(node) == "square" or call_name(node) == "pow" and isinstance(
        node, ast.Call) and len(node.args) == 1 and constant(node.args[0]) == 2


def _unbiased(code: Code) -> Iterator[Site]:
    """mean((x - mu)^2) -> sum(...) / (n - 1); var(x) -> var(x, ddof=1) (and back, in torch)."""
    for call in code.calls("mean"):
        if isinstance(call.func, ast.Attribute) and _is_square(call.func.value):
            data = call.func.value
        elif call.args and _is_square(call.args[0]):
            data = call.args[0]
        else:
            continue
        assert isinstance(call.func, ast.Attribute | ast.Name)
        total = ast.Call(_renamed(call.func, "sum"), call.args, call.keywords)
        count = expr(f"({ast.unparse(data)}).shape[-1] - 1")
        yield Site(call, [(call, ast.BinOp(total, ast.Div(), count))])
    for call in code.calls("var"):
        if code.framework == "torch":
            flag = keyword(call, "unbiased", "correction")
            biased = flag is not None and ast.unparse(flag.value) in ("False", "0")
            new = ast.keyword("correction", ast.Constant(1 if biased else 0))
        else:
            new = ast.keyword("ddof", ast.Constant(0 if keyword(call, "ddof") else 1))
        keywords = [k for k in call.keywords if k.arg not in ("unbiased", "correction", "ddof")]
        yield Site(call, [(call, ast.Call(call.func, call.args, [*keywords, new]))])


def _renamed(func: ast.Attribute | ast.Name, name: str) -> ast.expr:
    if isinstance(func, ast.Attribute):
        return ast.Attribute(func.value, name, ast.Load())
    return ast.Name(name, ast.Load())


def _affine_terms(code: Code, op: type[ast.operator]) -> Iterator[tuple[ast.BinOp, ast.expr]]:
    """In a function that normalises, `g * n` (Mult) or `n + b` (Add) with g or b one of its
    parameters (not the first, the input): the term and what is left without it."""
    normalising = {id(code.function_of(c)) for c, *_ in _eps_sums(code)}
    for node in code.nodes(ast.BinOp):
        func = code.function_of(node)
        if not isinstance(node.op, op) or func is None or id(func) not in normalising:
            continue
        if any(call_name(up) in SQRTS for up in code.ancestors(node)):
            continue  # var + eps
        a = func.args
        params = [x.arg for x in [*a.posonlyargs, *a.args]][1:]
        for term, rest in ((node.left, node.right), (node.right, node.left)):
            if isinstance(term, ast.Name) and term.id in params \
                    and _default(code, term) is None:
                yield node, rest
                break


def _module_flag(code: Code, flags: dict[str, str], slot: int, words: tuple[str, ...]
                 ) -> Iterator[Site]:
    """nn.LayerNorm(use_scale=False) in Flax; F.layer_norm(x, shape, None, b) in PyTorch."""
    for call in code.calls(*NORM_CALLS):
        if call_name(call) in code.functions:
            continue
        if code.framework == "flax" and isinstance(call.func, ast.Attribute):
            keywords = [k for k in call.keywords if k.arg not in flags]
            off = [ast.keyword(k, ast.Constant(False)) for k in flags]
            yield Site(call, [(call, ast.Call(call.func, call.args, [*keywords, *off]))])
        elif code.framework == "torch" and call_name(call) == "layer_norm":
            args = list(call.args)
            keywords = [k for k in call.keywords if k.arg not in words]
            if len(args) > slot:
                args[slot] = ast.Constant(None)
            elif keyword(call, *words) is None:
                continue
            yield Site(call, [(call, ast.Call(call.func, args, keywords))])


def _scale_dropped(code: Code) -> Iterator[Site]:
    for node, rest in _affine_terms(code, ast.Mult):
        yield Site(node, [(node, rest)])
    yield from _module_flag(code, {"use_scale": "scale"}, 2, ("weight",))


def _offset_dropped(code: Code) -> Iterator[Site]:
    for node, rest in _affine_terms(code, ast.Add):
        yield Site(node, [(node, rest)])
    yield from _module_flag(code, {"use_bias": "bias"}, 3, ("bias",))


_WHERE = "The statement's LayerNorm formula gives"
EPS_CHANGED = Operator(
    "layernorm-epsilon-changed", "layernorm",
    "the LayerNorm epsilon in {site} is off by a factor of ten",
    "The epsilon added to the variance is not the one asked for (1e-5 and 1e-6 are easy to "
    f"mix up: PyTorch uses 1e-5, Flax 1e-6). {_WHERE} the value; it shows on tiny inputs.")
EPS_OUTSIDE = Operator(
    "layernorm-epsilon-outside-sqrt", "layernorm",
    "the LayerNorm epsilon in {site} is added outside the square root",
    "The epsilon belongs inside: (x - mean) / sqrt(var + eps), not sqrt(var) + eps. "
    f"{_WHERE} the order; it shows on tiny inputs.")
UNBIASED = Operator(
    "layernorm-variance-bias", "layernorm",
    "the LayerNorm variance in {site} divides by the wrong count",
    "The variance divides by D - 1 (unbiased) where the LayerNorm's divides by D (biased), or "
    f"the other way round: divide by D. {_WHERE} the biased variance over the last axis.")
SCALE_DROPPED = Operator(
    "layernorm-scale-dropped", "layernorm",
    "the LayerNorm scale (gain) in {site} is missing",
    "The normalised value is not multiplied by the LayerNorm's gain. Multiply by it: "
    f"g * (x - mean) / sqrt(var + eps) + b. {_WHERE} the gain.")
OFFSET_DROPPED = Operator(
    "layernorm-offset-dropped", "layernorm",
    "the LayerNorm offset (bias) in {site} is missing",
    "The LayerNorm's bias is not added after the scaling. Add it: "
    f"g * (x - mean) / sqrt(var + eps) + b. {_WHERE} the bias.")

RULES = [Rule(EPS_CHANGED, _eps_changed), Rule(EPS_OUTSIDE, _eps_outside),
         Rule(UNBIASED, _unbiased), Rule(SCALE_DROPPED, _scale_dropped),
         Rule(OFFSET_DROPPED, _offset_dropped)]
