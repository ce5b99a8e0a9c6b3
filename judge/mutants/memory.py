"""What a cross-attention reads as its memory: the encoder's last block's output, not the
first block's, nor the encoder's input."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from judge.mutants.code import Code, Replacement, Rule, Site
from judge.mutants.model import ENCODER_OUTPUT, Operator

_KEPT = "_memories"


def _assigned(node: ast.AST) -> set[str]:
    return {t.id for n in ast.walk(node) if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name)}


def _parameters(node: ast.AST) -> set[str]:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    a = node.args
    return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}


def _memory_reads(code: Code) -> Iterator[tuple[ast.For, list[ast.stmt], list[ast.Name]]]:
    """A stack of blocks (a `for` loop updating a stream `x` it found assigned before it, or
    a parameter),
    and the reads of `x` after it by another loop's calls, past their first argument
    (`_mha(y, x, ...)`, `layer(y, x)`): a cross-attention's memory. The loop, the block it
    sits in, and the reads."""
    for owner in code.nodes(ast.AST):
        body = getattr(owner, "body", None)
        if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
            continue
        for i, loop in enumerate(body):
            if not isinstance(loop, ast.For) or loop.orelse:
                continue
            before = set().union(_parameters(owner), *(_assigned(s) for s in body[:i]))
            for stream in sorted(_assigned(ast.Module(loop.body, [])) & before):
                reads = [n for later in body[i + 1:] if isinstance(later, ast.For)
                         for n in _call_reads(later, stream)]
                if reads:
                    yield loop, body, reads


def _call_reads(loop: ast.For, name: str) -> list[ast.Name]:
    if name in _assigned(loop) or isinstance(loop.target, ast.Name) and loop.target.id == name:
        return []
    found = []
    for call in ast.walk(loop):
        if isinstance(call, ast.Call):
            args = [*call.args[1:], *(k.value for k in call.keywords)]
            found += [a for a in args if isinstance(a, ast.Name) and a.id == name]
    return found


def _stack_with_kept(loop: ast.For, stream: str, first: bool) -> list[ast.stmt]:
    """The loop with each block's output kept in order (after the encoder's input, when
    `first` is False: then [0] is the input)."""
    fresh = copy.deepcopy(loop)
    keep = ast.Expr(ast.Call(ast.Attribute(ast.Name(_KEPT, ast.Load()), "append", ast.Load()),
                             [ast.Name(stream, ast.Load())], []))
    fresh.body = [*fresh.body, keep]
    start: list[ast.expr] = [] if first else [ast.Name(stream, ast.Load())]
    init = ast.Assign([ast.Name(_KEPT, ast.Store())], ast.List(start, ast.Load()), lineno=0)
    return [init, fresh]


def _from(code: Code, first: bool) -> Iterator[Site]:
    for loop, _body, reads in _memory_reads(code):
        stream = reads[0].id
        kept = ast.Subscript(ast.Name(_KEPT, ast.Load()), ast.Constant(0), ast.Load())
        edits: list[tuple[ast.AST, Replacement]] = [(loop, _stack_with_kept(loop, stream, first))]
        edits += [(r, kept) for r in reads]
        yield Site(reads[0], edits)


_WHERE = ("The statement says the cross-attention's keys and values come from the encoder's "
          "output, after its last block.")
FIRST_BLOCK = Operator(
    "memory-from-first-block", "memory",
    "{site} reads the first encoder block's output instead of the last one's",
    "The cross-attention takes its keys and values from the output of the first block of "
    "the encoder instead of the encoder's final output; the two differ as soon as there is "
    f"more than one encoder block. Run the whole encoder first, then read its output. {_WHERE}",
    shows_in=(ENCODER_OUTPUT,))
EMBEDDINGS = Operator(
    "memory-from-encoder-input", "memory",
    "{site} reads the encoder's input (the embeddings) instead of its output",
    "The cross-attention takes its keys and values from the encoder's input (token plus "
    "position embeddings), as if the encoder had not run. Read the stream after the last "
    f"encoder block. {_WHERE}", shows_in=(ENCODER_OUTPUT,))

RULES = [Rule(FIRST_BLOCK, lambda code: _from(code, True)),
         Rule(EMBEDDINGS, lambda code: _from(code, False))]
