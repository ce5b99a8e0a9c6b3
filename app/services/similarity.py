"""Similarity of the accepted submissions inside an assignment, for its staff.

The measure is structural: each submission is parsed, and its syntax tree read in source
order as a sequence of node kinds (a name is just `Name`, a number just `Constant:int`), so
renaming variables, reformatting, changing comments or the numbers' spelling changes
nothing. Runs of K kinds are hashed and winnowed (Schleimer, Wilkerson and Aiken: the least
hash of every window of W consecutive runs), the fingerprints of the problem's starter code
are dropped (everybody shares those), and a pair's similarity is the share of fingerprints
the two have in common (2·|A∩B| / (|A|+|B|)). The matching regions are the source lines of
the runs the two share.
"""

from __future__ import annotations

import ast
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations

from sqlalchemy import select

from app.context import Context
from app.db.models import Submission, User
from app.services import assignments, gradebook
from app.services.errors import NotFound
from app.services.users import UserView
from judge import parse_source

K = 10  # node kinds per run: about a statement of a numerical function
W = 4  # winnowing window
MAX_PAIRS = 200


@dataclass(frozen=True)
class Structure:
    kinds: tuple[str, ...]
    lines: tuple[int, ...]  # the source line of each kind

    def runs(self) -> list[int]:
        """The hash of each run of K kinds, by its start."""
        return [zlib.crc32("\x1f".join(self.kinds[i:i + K]).encode())
                for i in range(max(0, len(self.kinds) - K + 1))]


def structure(code: str) -> Structure:
    """The node kinds of the code's syntax tree in source order (empty when it does not
    parse; accepted code always does)."""
    try:
        tree = parse_source(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return Structure((), ())
    kinds: list[str] = []
    lines: list[int] = []

    def visit(node: ast.AST, line: int) -> None:
        if isinstance(node, ast.expr_context):
            return  # Load, Store, Del: implied by the place
        line = getattr(node, "lineno", line)
        kind = type(node).__name__
        if isinstance(node, ast.Constant):
            kind += ":" + type(node.value).__name__
        elif isinstance(node, ast.Attribute):
            kind += "." + node.attr  # a library's API (`.reshape`), not the learner's names
        kinds.append(kind)
        lines.append(line)
        for child in ast.iter_child_nodes(node):
            visit(child, line)

    visit(tree, 1)
    return Structure(tuple(kinds), tuple(lines))


def winnow(hashes: list[int]) -> set[int]:
    if len(hashes) <= W:
        return set(hashes)
    return {min(hashes[i:i + W]) for i in range(len(hashes) - W + 1)}


def regions(st: Structure, shared: set[int]) -> list[tuple[int, int]]:
    """The source lines (first, last; merged when adjacent) of the runs in `shared`."""
    covered: set[int] = set()
    for i, h in enumerate(st.runs()):
        if h in shared:
            covered.update(st.lines[i:i + K])
    out: list[tuple[int, int]] = []
    for line in sorted(covered):
        if out and line <= out[-1][1] + 1:
            out[-1] = (out[-1][0], line)
        else:
            out.append((line, line))
    return out


@dataclass(frozen=True)
class Side:
    submission_id: int
    username: str
    share: float  # of its own fingerprints found in the other
    regions: tuple[tuple[int, int], ...]
    code: str = ""


@dataclass(frozen=True)
class Pair:
    problem: str
    similarity: float
    a: Side
    b: Side


@dataclass(frozen=True)
class _Doc:
    submission_id: int
    username: str
    code: str
    st: Structure
    prints: frozenset[int]


def compare(a: _Doc, b: _Doc, problem: str, *, with_code: bool = False) -> Pair:
    shared = a.prints & b.prints
    total = len(a.prints) + len(b.prints)
    similarity = 2 * len(shared) / total if total else 0.0
    all_shared = set(a.st.runs()) & set(b.st.runs())

    def side(d: _Doc) -> Side:
        share = len(shared) / len(d.prints) if d.prints else 0.0
        return Side(d.submission_id, d.username, round(share, 3),
                    tuple(regions(d.st, all_shared)), d.code if with_code else "")

    return Pair(problem, round(similarity, 3), side(a), side(b))


def _docs(ctx: Context, actor: UserView, assignment_id: int, slug: str) -> list[_Doc]:
    """Each learner's latest accepted counted submission of the problem, fingerprinted."""
    from app.services import problems

    with ctx.db.transaction() as s:
        a = assignments.require(s, actor, assignment_id, staff=True)
        item = next((p for p in a.problems if p.slug == slug), None)
        if item is None:
            raise NotFound(f"no problem {slug!r} in assignment {assignment_id}")
        latest: dict[int, int] = {}
        for c in gradebook.counted(s, assignment_id):
            if c.problem_id == item.problem_id and c.verdict == "AC":
                latest[c.user_id] = c.id
        rows = s.execute(select(Submission.id, Submission.code, User.username)
                         .join(User, User.id == Submission.user_id)
                         .where(Submission.id.in_(list(latest.values())))
                         .order_by(Submission.id)).all()
    starter = problems.get_problem(ctx, slug).get("starter") or ""
    boiler = winnow(structure(starter).runs())
    docs = []
    for sid, code, username in rows:
        st = structure(code)
        docs.append(_Doc(sid, username, code, st, frozenset(winnow(st.runs()) - boiler)))
    return docs


def pairs(ctx: Context, actor: UserView, assignment_id: int, slug: str,
          limit: int = MAX_PAIRS) -> list[Pair]:
    """Pairs of learners' accepted submissions, most similar first (staff only)."""
    docs = _docs(ctx, actor, assignment_id, slug)
    found = [compare(a, b, slug) for a, b in combinations(docs, 2)]
    found.sort(key=lambda p: (-p.similarity, p.a.submission_id, p.b.submission_id))
    return found[:limit]


def pair(ctx: Context, actor: UserView, assignment_id: int, slug: str, first: int,
         second: int) -> Pair:
    """One pair with both codes and their matching regions, side by side."""
    docs = {d.submission_id: d for d in _docs(ctx, actor, assignment_id, slug)}
    if first not in docs or second not in docs or first == second:
        raise NotFound(f"no pair of accepted submissions {first} and {second} of {slug!r} "
                       f"in assignment {assignment_id}")
    return compare(docs[first], docs[second], slug, with_code=True)


def numbered(code: str, marked: tuple[tuple[int, int], ...]) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, in a matching region) for the side-by-side page."""
    for n, text in enumerate(code.splitlines(), start=1):
        yield n, text, any(a <= n <= b for a, b in marked)
