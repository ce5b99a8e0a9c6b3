"""What each part reads: an attention's queries, keys and values; the stream's earlier
value; the embeddings and their position terms."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from judge.mutants.code import Code, Rule, Site, call_name, keyword, same
from judge.mutants.model import Operator
from judge.mutants.residual import base_name, residual, submodule

_ATTENDS = {"softmax", "exp", "scaled_dot_product_attention", "dot_product_attention"}
_FLAX_ATTENTION = ("MultiHeadDotProductAttention", "MultiHeadAttention", "SelfAttention")


def _attends(code: Code, name: str, depth: int = 2) -> bool:
    """Whether the file's function `name` computes an attention (itself or one call down)."""
    for n in ast.walk(code.functions[name]):
        called = call_name(n)
        if called in _ATTENDS or depth and called in code.functions and called != name \
                and _attends(code, called, depth - 1):
            return True
    return False


def _attention_inputs(code: Code) -> Iterator[tuple[ast.Call, ast.expr, list[ast.expr]]]:
    """Attention calls with a query input and distinct key/value inputs."""
    for call in code.nodes(ast.Call):
        name = call_name(call)
        flax = (isinstance(call.func, ast.Call) or submodule(call)) \
            and base_name(call) in _FLAX_ATTENTION
        if flax:
            q = keyword(call, "inputs_q")
            kv = [k.value for k in call.keywords if k.arg in ("inputs_kv", "inputs_k", "inputs_v")]
            query = q.value if q is not None else (call.args[0] if call.args else None)
            kv = kv or list(call.args[1:])
        elif name in code.functions and len(call.args) >= 2 and _attends(code, name):
            query, kv = call.args[0], [call.args[1]]
        else:
            continue
        if query is not None and kv and not all(same(query, k) for k in kv):
            yield call, query, kv


def _kv_from_queries(code: Code) -> Iterator[Site]:
    for call, query, kv in _attention_inputs(code):
        yield Site(call, [(k, query) for k in kv])


def _queries_from_kv(code: Code) -> Iterator[Site]:
    for call, query, kv in _attention_inputs(code):
        yield Site(call, [(query, kv[0])])


def _earlier_value(code: Code) -> Iterator[Site]:
    """An attention reads the previous sub-layer's input instead of its output:
    x1 = LN(x + F(x)); attention(x1, ...) -> attention(x, ...)."""
    for call, query, kv in _attention_inputs(code):
        for arg in [query, *kv]:
            defined = code.definition(arg) if isinstance(arg, ast.Name) else None
            if defined is None or not isinstance(arg, ast.Name):
                continue
            sums = (residual(code, n) for n in ast.walk(defined))
            stream = next((found[0] for found in sums if found is not None), None)
            if stream is not None and stream.id != arg.id:
                yield Site(call, [(n, stream) for n in [query, *kv] if same(n, arg)])
                break


def _lookup(code: Code, node: ast.AST, depth: int = 1) -> ast.expr | None:
    """An embedding lookup: emb[ids], F.embedding(ids, emb), jnp.take(emb, ids), nn.Embed;
    through a name assigned one (`x = F.embedding(...)`; `x + pos`)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) \
            or call_name(node) in ("embedding", "take", "Embed"):
        assert isinstance(node, ast.expr)
        return node
    if depth and isinstance(node, ast.Name):
        defined = code.definition(node)
        return None if defined is None else _lookup(code, defined, depth - 1)
    return None


def _position_terms(code: Code) -> Iterator[tuple[ast.BinOp, ast.expr, ast.expr]]:
    """emb[ids] + pos_embed: the sum, the lookup (or the name holding it), the position term."""
    for node in code.nodes(ast.BinOp):
        if not isinstance(node.op, ast.Add):
            continue
        for lookup, pos in ((node.left, node.right), (node.right, node.left)):
            if _lookup(code, lookup) is not None and "pos" in ast.unparse(pos).lower():
                yield node, lookup, pos
                break


def _position_dropped(code: Code) -> Iterator[Site]:
    for node, lookup, _pos in _position_terms(code):
        yield Site(node, [(node, lookup)])


def _position_swapped(code: Code) -> Iterator[Site]:
    """One side's position embeddings added on the other side (encoder for decoder)."""
    terms = list(_position_terms(code))
    for node, _lookup, pos in terms:
        for _other, _, theirs in terms:
            if not same(pos, theirs):
                yield Site(node, [(pos, theirs)])


def _table(lookup: ast.expr) -> ast.expr | None:
    """The embedding table a lookup reads: emb of emb[ids], F.embedding(ids, emb)..."""
    if isinstance(lookup, ast.Subscript):
        return lookup.value
    if isinstance(lookup, ast.Call):
        if call_name(lookup) == "embedding" and len(lookup.args) >= 2:
            return lookup.args[1]
        if call_name(lookup) == "take" and lookup.args:
            return lookup.args[0]
    return None


def _tables_swapped(code: Code) -> Iterator[Site]:
    """One side's tokens looked up in the other side's table: src_emb[tgt_ids]."""
    tables: list[tuple[ast.BinOp, ast.expr]] = []
    for node, lookup, _pos in _position_terms(code):
        found = _lookup(code, lookup)
        table = None if found is None else _table(found)
        if table is not None and not any(t is table for _, t in tables):
            tables.append((node, table))
    for node, table in tables:
        for _, theirs in tables:
            if not same(table, theirs):
                yield Site(node, [(table, theirs)])


KV_FROM_QUERIES = Operator(
    "keys-values-from-queries", "wiring",
    "the keys and values of {site} come from the query input",
    "The attention reads its keys and values from the same input as its queries; take them "
    "from the other input. The statement says which input gives the queries and which the "
    "keys and values.")
QUERIES_FROM_KV = Operator(
    "queries-from-keys-values", "wiring",
    "the queries of {site} come from the key/value input",
    "The attention reads its queries from the input meant for keys and values; take them "
    "from the sub-layer's own input. The statement says which input gives the queries.")
POSITION_DROPPED = Operator(
    "position-term-dropped", "embedding",
    "the position embedding of {site} is missing",
    "The token embeddings are used without adding the position embeddings: add them before "
    "the first block, as the statement's first step does.")

EARLIER_VALUE = Operator(
    "attention-reads-earlier-value", "wiring",
    "{site} reads the previous sub-layer's input instead of its output",
    "The attention takes the value from before the previous sub-layer (the block input) "
    "instead of that sub-layer's output; use the output. The statement's formulas say what "
    "each sub-layer reads.")
POSITION_SWAPPED = Operator(
    "position-terms-swapped", "embedding",
    "{site} adds the other side's position embeddings",
    "The encoder's position embeddings are added on the decoder side, or the other way "
    "round (with different lengths, the shapes do not even match); use each side's own. The "
    "statement names the position embedding of each side.")

TABLES_SWAPPED = Operator(
    "embedding-tables-swapped", "embedding",
    "{site} looks its tokens up in the other side's embedding table",
    "The token ids of one side are looked up in the other side's embedding table (src_emb "
    "for the target ids, or the reverse); with different vocabularies the ids may not even "
    "fit. Look each side's ids up in its own table, as the statement's first step says.")

RULES = [Rule(KV_FROM_QUERIES, _kv_from_queries), Rule(QUERIES_FROM_KV, _queries_from_kv),
         Rule(EARLIER_VALUE, _earlier_value), Rule(POSITION_DROPPED, _position_dropped),
         Rule(POSITION_SWAPPED, _position_swapped), Rule(TABLES_SWAPPED, _tables_swapped)]
