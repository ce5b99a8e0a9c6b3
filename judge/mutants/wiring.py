"""How the parts are wired: weight slots, sub-layer order, head layout."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from judge.mutants.attention import HEADS
from judge.mutants.code import Code, Replacement, Rule, Site, call_name, constant, same
from judge.mutants.model import Operator
from judge.mutants.residual import residual


def _is_slot(node: ast.AST) -> bool:
    """A weight picked by a fixed index or key: blk[4], W[0:4], *W[4:8], "sa_"."""
    if isinstance(node, ast.Starred):
        return _is_slot(node.value)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.Subscript) and not any(
        isinstance(n, ast.Name) for n in ast.walk(node.slice))


def _block_of(code: Code, node: ast.AST) -> ast.AST:
    return next((up for up in code.ancestors(node) if isinstance(
        up, ast.For | ast.While | ast.FunctionDef | ast.AsyncFunctionDef)), code.tree)


def _slots_swapped(code: Code) -> Iterator[Site]:
    calls = [c for c in code.nodes(ast.Call) if any(map(_is_slot, c.args))]
    for call in calls:  # two slots of one call: w_q for w_k...
        slots = [a for a in call.args if _is_slot(a) and isinstance(a, ast.Subscript)]
        for a, b in zip(slots, slots[1:], strict=False):
            if same(a.value, b.value):
                yield Site(call, [(a, b), (b, a)])
    pairs = [(a, b) for i, a in enumerate(calls) for b in calls[i + 1:]
             if call_name(a) == call_name(b) and _block_of(code, a) is _block_of(code, b)]
    for first, second in pairs:  # two sub-layers' weights
        if len(first.args) != len(second.args) or any(
                call_name(c) == call_name(first) and first.lineno < c.lineno < second.lineno
                for c in calls):
            continue  # only neighbours: the next call of the same function
        edits: list[tuple[ast.AST, Replacement]] = []
        for a, b in zip(first.args, second.args, strict=True):
            if _is_slot(a) and _is_slot(b) and not same(a, b):
                edits += [(a, b), (b, a)]
        if edits:
            yield Site(second, edits)


def _updates(code: Code, body: list[ast.stmt]) -> list[tuple[int, str]]:
    """Statements of a block that add a sub-layer to a stream: their index and the stream."""
    found = []
    for i, stmt in enumerate(body):
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(
            stmt.targets) == 1 else None
        value = stmt.value if isinstance(stmt, ast.Assign | ast.Return) else None
        if value is None or target is not None and not isinstance(target, ast.Name):
            continue
        for n in ast.walk(value):
            found_residual = residual(code, n)
            if found_residual and (target is None or found_residual[0].id == target.id):
                found.append((i, found_residual[0].id))
                break
    return found


def _assigned(stmt: ast.stmt) -> set[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _group_start(body: list[ast.stmt], end: int, floor: int, stream: str) -> int:
    """The first statement of the run that feeds statement `end` (a backward slice that
    stops at the stream's previous value: that belongs to the sub-layer before)."""
    read = {n.id for n in ast.walk(body[end]) if isinstance(n, ast.Name)}
    start = end
    while start - 1 > floor:
        stmt = body[start - 1]
        if not isinstance(stmt, ast.Assign):
            break
        assigned = _assigned(stmt)
        if not assigned & read or stream in assigned:
            break
        read |= {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        start -= 1
    return start


def _reordered(code: Code) -> Iterator[Site]:
    for owner in code.nodes(ast.AST):
        body = getattr(owner, "body", None)
        if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
            continue
        updates = _updates(code, body)
        for (a_end, stream), (b_end, other) in zip(updates, updates[1:], strict=False):
            if stream != other or isinstance(body[a_end], ast.Return):
                continue
            a_start = _group_start(body, a_end, -1, stream)
            b_start = _group_start(body, b_end, a_end, stream)
            last = body[b_end]
            if b_start != a_end + 1 or isinstance(last, ast.Return) and (
                    last.value is None or isinstance(last.value, ast.Tuple)):
                continue
            first, second = body[a_start:a_end + 1], body[b_start:b_end + 1]
            # What the later sub-layer reads too (a helper, a size) stays in front.
            needed = {n.id for s in second for n in ast.walk(s) if isinstance(n, ast.Name)}
            kept = [s for s in first[:-1] if _assigned(s) & needed]
            first = [s for s in first if s not in kept]
            tail: list[ast.stmt] = []
            if isinstance(last, ast.Return) and last.value is not None:
                name = ast.Name(stream, ast.Store())
                second = [*second[:-1], ast.Assign([name], last.value, lineno=0)]
                tail = [ast.Return(ast.Name(stream, ast.Load()))]
            edits: list[tuple[ast.AST, Replacement]] = [
                (body[a_start], [*kept, *second, *first, *tail])]
            edits += [(s, []) for s in body[a_start + 1:b_end + 1]]
            yield Site(body[a_end], edits)


def _head_layout(code: Code) -> Iterator[Site]:
    """Heads merged (or split) without moving the head axis: the transpose is left out."""
    moves = ("transpose", "permute", "swapaxes")
    for call in code.calls("reshape", "view"):
        inner = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(inner, ast.Call) and call_name(inner) in moves and len(inner.args) >= 2 \
                and isinstance(inner.func, ast.Attribute):
            yield Site(call, [(inner, inner.func.value)])
    for call in code.calls(*moves):
        inner = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(inner, ast.Call) and call_name(inner) in ("reshape", "view") \
                and len(call.args) >= 2:
            yield Site(call, [(call, inner)])


_HEAD_WIDTHS = ("d_k", "dk", "head_dim", "d_head", "depth")


def _head_width(node: ast.expr, heads: str) -> bool:
    """d // H, d_k, -1: the last axis of a head split."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        return isinstance(node.right, ast.Name) and node.right.id == heads
    return isinstance(node, ast.Name) and node.id in _HEAD_WIDTHS or constant(node) == -1


def _interleaved(code: Code) -> Iterator[Site]:
    """reshape(..., H, d_k) -> reshape(..., d_k, H).swapaxes(-1, -2): head h takes features
    h, h + H, h + 2H... instead of a contiguous block."""
    for call in code.calls("reshape", "view"):
        args = call.args
        if len(args) < 3 or not isinstance(args[-2], ast.Name) or args[-2].id not in HEADS \
                or not _head_width(args[-1], args[-2].id):
            continue
        flipped = ast.Call(call.func, [*args[:-2], args[-1], args[-2]], call.keywords)
        swap = ast.Attribute(flipped, "swapaxes", ast.Load())
        yield Site(call, [(call, ast.Call(swap, [ast.Constant(-1), ast.Constant(-2)], []))])


SLOTS_SWAPPED = Operator(
    "weight-slots-swapped", "wiring",
    "two weights of {site} are swapped",
    "Two weight matrices are used in each other's place (the order of slots or keys); put "
    "each where it belongs. The statement lists which weight goes where.")
REORDERED = Operator(
    "sublayers-reordered", "wiring",
    "{site} comes after the next sub-layer instead of before it",
    "Two sub-layers run in the other order; swap them back. The statement gives the order "
    "of the sub-layers.")
HEAD_LAYOUT = Operator(
    "head-axis-not-moved", "heads",
    "the heads in {site} are split or merged without moving the head axis",
    "A reshape between (T, H, d_k) and (H, T, d_k) needs a transpose; without it the "
    "features of different positions and heads are mixed. The statement says how heads "
    "split the features and are concatenated back.")
INTERLEAVED = Operator(
    "heads-interleaved", "heads",
    "the heads in {site} take interleaved features instead of contiguous blocks",
    "Head h takes features h, h + H, h + 2H... instead of the block h*d_k .. (h+1)*d_k - 1: "
    "split the last axis as (H, d_k), in that order. The statement says which features "
    "each head owns.")

RULES = [Rule(SLOTS_SWAPPED, _slots_swapped), Rule(REORDERED, _reordered),
         Rule(HEAD_LAYOUT, _head_layout), Rule(INTERLEAVED, _interleaved)]
