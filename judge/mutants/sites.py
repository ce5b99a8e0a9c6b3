"""Where a change is, in words: the labels a reference gives its sub-layers.

A reference labels a region with a comment `# site: the cross-attention`:
- at the end of a line that opens a block (`def`, `for`, `if`...): the whole block;
- at the end of any other line: the statement on that line;
- on a line of its own: the lines below it, up to the next own-line label at the same or an
  outer indentation, or the end of the enclosing block.
The innermost region wins. Code outside every region is named by its function (`_mha`), or
by its line at module level. Labels are comments, so labelling a reference changes none of
its outputs.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

_LABEL = re.compile(r"#\s*site:\s*(.+?)\s*$")
_DETERMINERS = ("the ", "every ", "each ", "all ", "a ", "an ", "both ")


@dataclass(frozen=True)
class Region:
    first: int
    last: int
    label: str


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _own_line_end(lines: list[str], row: int, col: int) -> int:
    """The last line an own-line label on `row` (1-based) at indentation `col` covers."""
    last = row
    for i in range(row, len(lines)):  # lines[i] is line i + 1
        text = lines[i]
        stripped = text.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            if _LABEL.search(stripped) and _indent(text) <= col:
                break
            continue
        if _indent(text) < col:
            break
        last = i + 1
    return last


def _statement_on(tree: ast.AST, row: int) -> ast.stmt | None:
    """The outermost statement that starts on `row`, else the innermost that spans it."""
    starting: list[ast.stmt] = []
    spanning: list[ast.stmt] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            if node.lineno == row:
                starting.append(node)
            elif node.lineno <= row <= end:
                spanning.append(node)
    if starting:
        return min(starting, key=lambda n: n.col_offset)
    if spanning:
        return min(spanning, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)
    return None


def regions(source: str, tree: ast.AST) -> list[Region]:
    lines = source.splitlines()
    found: list[Region] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return found
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        m = _LABEL.search(tok.string)
        if not m:
            continue
        row, col = tok.start
        label = m.group(1)
        if not lines[row - 1][:col].strip():
            found.append(Region(row + 1, _own_line_end(lines, row, col), label))
            continue
        stmt = _statement_on(tree, row)
        if stmt is not None:
            found.append(Region(stmt.lineno, stmt.end_lineno or stmt.lineno, label))
    return found


class SiteNames:
    """Names the site of a line for a title."""

    def __init__(self, source: str, tree: ast.AST):
        self._regions = regions(source, tree)
        self._functions = [n for n in ast.walk(tree)
                           if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]

    def label(self, line: int) -> str | None:
        inside = [r for r in self._regions if r.first <= line <= r.last]
        if not inside:
            return None
        return min(inside, key=lambda r: r.last - r.first).label

    def name(self, line: int) -> str:
        label = self.label(line)
        if label is not None:
            return label if label.lower().startswith(_DETERMINERS) else f"the {label}"
        funcs = [f for f in self._functions if f.lineno <= line <= (f.end_lineno or f.lineno)]
        if funcs:
            inner = min(funcs, key=lambda f: (f.end_lineno or f.lineno) - f.lineno)
            return f"`{inner.name}`"
        return f"line {line}"
