"""Attention masks: dropped, inverted, shifted off the diagonal, filled with 0 instead of -inf,
applied after the softmax, moved to another attention."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from judge.mutants import flax_attention
from judge.mutants.code import (
    Code,
    Rule,
    Site,
    call_name,
    constant,
    is_negative_infinity,
    keyword,
    rebuilt,
)
from judge.mutants.model import Operator

# Keyword arguments that carry a mask into a library's attention (Flax, PyTorch, JAX).
MASK_KEYWORDS = {"mask", "attn_mask", "tgt_mask", "memory_mask", "src_mask", "key_padding_mask",
                 "memory_key_padding_mask", "tgt_key_padding_mask", "src_key_padding_mask"}
# Names a mask goes by when it is passed to an attention function of the file.
_MASK_NAME = re.compile(r"mask|causal|keep|allowed|pad", re.IGNORECASE)


def where_masks(code: Code) -> Iterator[tuple[ast.Call, int]]:
    """where(m, s, -inf) (or where(m, -inf, s)): the call and the position of the scores."""
    for call in code.calls("where"):
        if len(call.args) == 3:
            if is_negative_infinity(call.args[2]):
                yield call, 1
            elif is_negative_infinity(call.args[1]):
                yield call, 2


def filled_masks(code: Code) -> Iterator[ast.Call]:
    """s.masked_fill(m, -inf)."""
    for call in code.calls("masked_fill", "masked_fill_"):
        if len(call.args) == 2 and is_negative_infinity(call.args[1]) \
                and isinstance(call.func, ast.Attribute):
            yield call


def _additive_masks(code: Code) -> Iterator[tuple[ast.BinOp, ast.expr]]:
    """s + triu(full(..., -inf), 1): the sum and the scores."""
    for node in code.nodes(ast.BinOp):
        if not isinstance(node.op, ast.Add):
            continue
        for scores, mask in ((node.left, node.right), (node.right, node.left)):
            if any(is_negative_infinity(n) for n in ast.walk(mask)) and isinstance(
                    mask, ast.Call) and not any(is_negative_infinity(n) for n in ast.walk(scores)):
                yield node, scores
                break


def _mask_arguments(code: Code) -> Iterator[tuple[ast.Call, ast.keyword | int]]:
    """Masks handed to an attention: by keyword to a library, by name to the file's own."""
    for call in code.nodes(ast.Call):
        for k in call.keywords:
            given = not (isinstance(k.value, ast.Constant) and k.value.value in (None, False))
            if given and k.arg in MASK_KEYWORDS | {"causal", "is_causal"}:
                yield call, k
        if call_name(call) in code.functions:
            for i, arg in enumerate(call.args):
                if isinstance(arg, ast.Name) and _MASK_NAME.search(arg.id):
                    yield call, i


def _no_mask(code: Code, call: ast.Call, at: int) -> ast.expr:
    """What a function of the file takes for "no mask": True where it only selects with it
    (where(True, s, -inf) keeps every score), else None (a library's "no mask")."""
    func = code.functions[call_name(call) or ""]
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    name = params[at] if at < len(params) else None
    asks = any(isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id == name
               and isinstance(n.ops[0], ast.Is | ast.IsNot) for n in ast.walk(func))
    selects = any(call_name(n) == "where" and isinstance(n, ast.Call) and n.args
                  and isinstance(n.args[0], ast.Name) and n.args[0].id == name
                  for n in ast.walk(func))
    return ast.Constant(True if selects and not asks else None)


def _with_argument(call: ast.Call, which: ast.keyword | int, value: ast.expr | None) -> ast.Call:
    args = list(call.args)
    keywords = list(call.keywords)
    if isinstance(which, int):
        args[which] = value if value is not None else ast.Constant(None)
    else:
        keywords.remove(which)
        if value is not None:
            keywords.append(ast.keyword(which.arg, value))
    return ast.Call(call.func, args, keywords)


def _argument_value(call: ast.Call, which: ast.keyword | int) -> ast.expr:
    return call.args[which] if isinstance(which, int) else which.value


def _dropped(code: Code) -> Iterator[Site]:
    for call, scores_at in where_masks(code):
        yield Site(call, [(call, call.args[scores_at])])
    for call in filled_masks(code):
        assert isinstance(call.func, ast.Attribute)
        yield Site(call, [(call, call.func.value)])
    for node, scores in _additive_masks(code):
        yield Site(node, [(node, scores)])
    for call, which in _mask_arguments(code):
        flag = isinstance(which, ast.keyword) and which.arg in ("causal", "is_causal")
        value = _argument_value(call, which)
        off: ast.expr | None = None
        if flag or ast.unparse(value) == "True":
            off = ast.Constant(False)
        elif isinstance(which, int):
            off = _no_mask(code, call, which)
        yield Site(call, [(call, _with_argument(call, which, off))])


def _inverted(code: Code) -> Iterator[Site]:
    for call, _ in where_masks(code):
        swapped = [call.args[0], call.args[2], call.args[1]]
        yield Site(call, [(call, ast.Call(call.func, swapped, call.keywords))])
    for call in filled_masks(code):
        flipped = ast.Compare(call.args[0], [ast.Eq()], [ast.Constant(0)])
        yield Site(call, [(call, ast.Call(call.func, [flipped, call.args[1]], call.keywords))])
    for call, which in _mask_arguments(code):
        value = _argument_value(call, which)
        if isinstance(which, ast.keyword) and which.arg in ("causal", "is_causal") \
                or isinstance(value, ast.Constant):
            continue
        flipped = ast.Compare(value, [ast.Eq()], [ast.Constant(0)])
        yield Site(call, [(call, _with_argument(call, which, flipped))])


_STRICTER = {ast.GtE: ast.Gt, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.Lt: ast.LtE}


def _shifted(code: Code) -> Iterator[Site]:
    """The diagonal moves to the other side: tril(m) -> tril(m, -1); i >= j -> i > j."""
    for call in code.calls("tril", "triu"):
        function = isinstance(call.func, ast.Name) or isinstance(call.func, ast.Attribute) \
            and code.is_module(call.func.value)
        at = 1 if function else 0  # where k goes: np.tril(m, k), m.tril(k)
        args, keywords = list(call.args), list(call.keywords)
        k_kw = keyword(call, "k", "diagonal")
        if k_kw is not None:
            k = constant(k_kw.value)
            keywords[keywords.index(k_kw)] = ast.keyword(k_kw.arg, ast.Constant(int(k or 0) - 1))
        elif len(args) > at:
            k = constant(args[at])
            args[at] = ast.Constant(int(k or 0) - 1)
        elif len(args) == at:
            k = 0.0
            args.append(ast.Constant(-1))
        else:
            continue
        if k is not None:
            yield Site(call, [(call, ast.Call(call.func, args, keywords))])
    for node in code.nodes(ast.Compare):
        if len(node.ops) == 1 and type(node.ops[0]) in _STRICTER \
                and "arange" in ast.unparse(node):
            op = _STRICTER[type(node.ops[0])]()
            yield Site(node, [(node, ast.Compare(node.left, [op], node.comparators))])


def _zero_fill(code: Code) -> Iterator[Site]:
    for call, scores_at in where_masks(code):
        args = list(call.args)
        args[3 - scores_at] = ast.Constant(0.0)
        yield Site(call, [(call, ast.Call(call.func, args, call.keywords))])
    for call in filled_masks(code):
        zero = [call.args[0], ast.Constant(0.0)]
        yield Site(call, [(call, ast.Call(call.func, zero, call.keywords))])


def _statement(code: Code, node: ast.AST) -> ast.stmt | None:
    return next((up for up in code.ancestors(node) if isinstance(up, ast.stmt)), None)


def _is_softmax_of(call: ast.AST, name: str) -> bool:
    return isinstance(call, ast.Call) and "softmax" in (call_name(call) or "") \
        and bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == name


def _later_softmax(code: Code, stmt: ast.stmt, name: str) -> ast.Call | None:
    """The first softmax of `name` in a later statement of the block `stmt` is in."""
    owner = code.parent.get(id(stmt))
    body = next((b for b in (getattr(owner, f, None) for f in ("body", "orelse"))
                 if isinstance(b, list) and stmt in b), None)
    if body is None:
        return None
    for later in body[body.index(stmt) + 1:]:
        found = [n for n in ast.walk(later) if isinstance(n, ast.Call) and _is_softmax_of(n, name)]
        if found:
            return min(found, key=lambda n: (n.lineno, n.col_offset))
        if name in {n.id for n in ast.walk(later) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}:
            return None  # the masked scores are replaced before any softmax reads them
    return None


def _maskings(code: Code) -> Iterator[tuple[ast.Call, ast.expr, ast.expr, bool]]:
    """Each masking of scores: the call, the scores, the mask, and whether the mask says
    which keys to keep (where(m, s, -inf)) rather than which to hide (masked_fill)."""
    for call, scores_at in where_masks(code):
        yield call, call.args[scores_at], call.args[0], scores_at == 1
    for call in filled_masks(code):
        assert isinstance(call.func, ast.Attribute)
        yield call, call.func.value, call.args[0], False


def _zeroed(masking: ast.Call, weights: ast.expr, mask: ast.expr, keep: bool) -> ast.expr:
    """The weights with the masked positions set to 0, in the masking's own idiom."""
    if call_name(masking) == "where":
        args = [mask, weights, ast.Constant(0.0)] if keep else [mask, ast.Constant(0.0), weights]
        return ast.Call(masking.func, args, [])
    filled = ast.Attribute(weights, "masked_fill", ast.Load())
    return ast.Call(filled, [mask, ast.Constant(0.0)], [])


_PENDING = "_mask_after_softmax"


def _after_softmax(code: Code) -> Iterator[Site]:
    """softmax(where(m, s, -inf)) -> where(m, softmax(s), 0): weights not renormalised.
    The masking may be inline, a statement before the softmax in the same block, or such a
    statement under an `if` (`if mask is not None:`): the mask is then kept where the `if`
    makes it and applied to the weights only when it was made."""
    for masking, scores, mask, keep in _maskings(code):
        up = code.parent.get(id(masking))
        if isinstance(up, ast.Call) and up.args and up.args[0] is masking \
                and "softmax" in (call_name(up) or ""):
            weights = ast.Call(up.func, [scores, *up.args[1:]], up.keywords)
            yield Site(masking, [(up, _zeroed(masking, weights, mask, keep))])
            continue
        stmt = _statement(code, masking)
        if not isinstance(stmt, ast.Assign) or stmt.value is not masking \
                or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            continue
        name = stmt.targets[0].id
        softmax = _later_softmax(code, stmt, name)
        if softmax is not None:
            weights = ast.Call(softmax.func, softmax.args, softmax.keywords)
            yield Site(masking, [(masking, scores),
                                 (softmax, _zeroed(masking, weights, mask, keep))])
            continue
        guard = code.parent.get(id(stmt))
        if not isinstance(guard, ast.If) or guard.orelse or stmt not in guard.body:
            continue
        softmax = _later_softmax(code, guard, name)
        if softmax is None:
            continue
        pending = ast.Name(_PENDING, ast.Load())
        kept = ast.Assign([ast.Name(_PENDING, ast.Store())], mask, lineno=0)
        guarded = rebuilt(guard, [(stmt, kept)])
        assert isinstance(guarded, ast.stmt)
        weights = ast.Call(softmax.func, softmax.args, softmax.keywords)
        after = ast.IfExp(ast.Compare(pending, [ast.Is()], [ast.Constant(None)]), weights,
                          _zeroed(masking, weights, pending, keep))
        none = ast.Assign([ast.Name(_PENDING, ast.Store())], ast.Constant(None), lineno=0)
        yield Site(masking, [(guard, [none, guarded]), (softmax, after)])
    for call in code.nodes(ast.Call):  # Flax: the attention module applied with a mask
        if isinstance(call.func, ast.Call) and keyword(call, "mask") is not None:
            after_fn = flax_attention.weighted(flax_attention.SOFTMAXES["masked-after"])
            yield from flax_attention.with_attention_fn(code, after_fn, only=call.func)


def _moved(code: Code) -> Iterator[Site]:
    """The mask of one attention given to the next attention of the same kind instead."""
    found = list(_mask_arguments(code))
    for i, (a, slot) in enumerate(found):
        later = [(b, other) for b, other in found[i + 1:] if b is not a]
        nxt = next((c for c in code.nodes(ast.Call) if _position(c) > _position(a)
                    and _same_attention(code, a, c)), None)
        if nxt is None:
            continue
        theirs = next((other for b, other in later if b is nxt), None)
        mine = _argument_value(a, slot)
        if isinstance(slot, int) and isinstance(theirs, int) and slot == theirs:
            if _defined_before(code, nxt.args[slot], a):  # the two masks trade places
                yield Site(nxt, [(mine, nxt.args[slot]), (nxt.args[slot], mine)])
            else:  # the later mask does not exist yet: the first attention goes unmasked
                yield Site(nxt, [(mine, _no_mask(code, a, slot)), (nxt.args[slot], mine)])
        elif isinstance(slot, ast.keyword) and theirs is None:
            off = ast.Constant(False) if slot.arg in ("causal", "is_causal") else None
            keywords = [k for k in nxt.keywords if k.arg != slot.arg]
            given = ast.Call(nxt.func, nxt.args, [*keywords, slot])
            yield Site(nxt, [(a, _with_argument(a, slot, off)), (nxt, given)])


def _defined_before(code: Code, value: ast.expr, at: ast.expr) -> bool:
    """Whether every name `value` reads exists where `at` is (a parameter, an import, a
    function of the file, or assigned on an earlier line)."""
    known = code.scope_names(at) | code.modules | set(code.functions)
    earlier = {t.id for n in ast.walk(code.tree) if isinstance(n, ast.Assign)
               and n.lineno < at.lineno for t in n.targets if isinstance(t, ast.Name)}
    return all(n.id in known | earlier for n in ast.walk(value) if isinstance(n, ast.Name))


def _position(node: ast.expr) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _same_attention(code: Code, a: ast.Call, b: ast.Call) -> bool:
    flax = ("MultiHeadDotProductAttention", "MultiHeadAttention")
    if isinstance(a.func, ast.Call) and isinstance(b.func, ast.Call):
        return call_name(a) in flax and call_name(b) in flax
    return call_name(a) == call_name(b) and call_name(a) in code.functions \
        and code.function_of(a) is code.function_of(b)


_WHERE = "The statement says which positions each attention may see."
DROPPED = Operator(
    "mask-dropped", "mask",
    "the mask of {site} is missing",
    "Every position attends to every key, including the ones it must not see. Hide them "
    f"in the scores before the softmax. {_WHERE}")
INVERTED = Operator(
    "mask-inverted", "mask",
    "the mask of {site} is inverted",
    "The mask hides the positions that must be seen and keeps the ones to hide (True means "
    f"'attend' in one convention and 'hide' in another): check which value your function "
    f"takes to mean 'attend'. {_WHERE}")
SHIFTED = Operator(
    "mask-shifted", "mask",
    "the causal mask of {site} is off by one (the diagonal is on the wrong side)",
    "A query must see its own position and the earlier ones (key j <= query i); this mask "
    "moves the diagonal (tril with k=-1, or > for >=). The statement's causal rule gives it.")
ZERO_FILL = Operator(
    "mask-filled-with-zero", "mask",
    "the masked scores of {site} are set to 0 instead of -inf",
    "A masked score of 0 still gets weight after the softmax; masked scores must be -inf (or "
    f"removed) so their weight is exactly zero. {_WHERE}")

AFTER_SOFTMAX = Operator(
    "mask-after-softmax", "mask",
    "the mask of {site} is applied after the softmax",
    "The softmax runs over every key and the hidden ones are zeroed afterwards, so a row's "
    "weights no longer sum to one. Mask the scores (with -inf) before the softmax. "
    f"{_WHERE}")
MOVED = Operator(
    "mask-moved", "mask",
    "{site} is masked with another attention's mask",
    "A mask meant for one attention is applied to another one (a causal mask on the "
    "cross-attention, a padding mask on the self-attention); give each attention its own. "
    f"{_WHERE}")

RULES = [Rule(DROPPED, _dropped), Rule(INVERTED, _inverted), Rule(SHIFTED, _shifted),
         Rule(ZERO_FILL, _zero_fill), Rule(AFTER_SOFTMAX, _after_softmax), Rule(MOVED, _moved)]
