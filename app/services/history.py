"""A user's submission history as the pages list it: the framework each one used (read from
its imports), how long its slowest test ran, its score and verdict; filtered by problem and
verdict. And the attempts a problem page counts."""

from __future__ import annotations

import ast
import re
from typing import Any

from sqlalchemy import func, select

from app.context import Context
from app.db.models import Judgement, Problem, Submission, TestResultRow
from app.services import problems, scope
from app.services.users import UserView
from judge import parse_source

# The most specific first: Flax code imports JAX too, and any of them may import NumPy.
FRAMEWORKS = (("flax", "Flax"), ("torch", "PyTorch"), ("jax", "JAX"), ("numpy", "NumPy"))
PENDING = "pending"  # the verdict filter's value for submissions not judged yet
_IMPORT_RE = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)


def imported_modules(code: str) -> set[str]:
    """The top-level modules the code imports (by its text when it does not parse)."""
    try:
        tree = parse_source(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set(_IMPORT_RE.findall(code))
    nodes = list(ast.walk(tree))
    names = [a.name for n in nodes if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in nodes
              if isinstance(n, ast.ImportFrom) and n.module and n.level == 0]
    return {name.split(".")[0] for name in names}


def framework_of(code: str) -> str | None:
    """The framework the code is written in, in words (None: it imports none)."""
    found = imported_modules(code)
    return next((words for module, words in FRAMEWORKS if module in found), None)


def list_history(ctx: Context, user: UserView, *, problem: str | None = None,
                 verdict: str | None = None, limit: int = 50,
                 before: int | None = None) -> list[dict[str, Any]]:
    """The user's submissions, newest first, with framework, slowest test time (ms), score
    and verdict. `verdict` is a verdict code or "pending"; `before` an id cursor."""
    if problem is not None and not problems.SLUG_RE.match(problem):
        return []
    newest = (select(func.max(Judgement.id).label("jid"), Judgement.submission_id)
              .group_by(Judgement.submission_id).subquery())
    slowest = (select(TestResultRow.judgement_id, func.max(TestResultRow.time_ms).label("ms"))
               .group_by(TestResultRow.judgement_id).subquery())
    q = (select(Submission.id, Submission.mode, Submission.status, Submission.verdict,
                Submission.code, Submission.created_at, Submission.problem_id, Problem.slug,
                Judgement.passed,
                Judgement.total, slowest.c.ms)
         .join(Problem, Problem.id == Submission.problem_id)
         .outerjoin(newest, newest.c.submission_id == Submission.id)
         .outerjoin(Judgement, Judgement.id == newest.c.jid)
         .outerjoin(slowest, slowest.c.judgement_id == newest.c.jid)
         .where(Submission.user_id == user.id))
    if problem is not None:
        q = q.where(Problem.slug == problem)
    if verdict == PENDING:
        q = q.where(Submission.status != "done")
    elif verdict:
        q = q.where(Submission.status == "done", Submission.verdict == verdict)
    if before is not None:
        q = q.where(Submission.id < before)
    with ctx.db.transaction() as s:
        rows = s.execute(q.order_by(Submission.id.desc()).limit(limit)).all()
        exams = scope.open_exams(s, user.id) if rows else []
    out = []
    for r in rows:
        done = r.status == "done"
        # During an exam the list shows its submissions' verdicts only (services/scope.py).
        veiled = scope.veil_until(exams, problem_id=r.problem_id, created_at=r.created_at,
                                  mode=r.mode) is not None
        out.append({
            "id": r.id, "problem": r.slug, "mode": r.mode, "status": r.status,
            "verdict": r.verdict if done else None,
            "created_at": r.created_at.isoformat(),
            "framework": framework_of(r.code),
            "time_ms": r.ms if done and not veiled else None,
            "score": ({"passed": r.passed, "total": r.total}
                      if done and r.total is not None and not veiled else None),
        })
    return out


def attempts(ctx: Context, user: UserView | None, slug: str) -> dict[str, int]:
    """How many times the user ran and submitted code for a problem."""
    if user is None:
        return {"submit": 0, "run": 0}
    with ctx.db.transaction() as s:
        rows = s.execute(select(Submission.mode, func.count())
                         .join(Problem, Problem.id == Submission.problem_id)
                         .where(Submission.user_id == user.id, Problem.slug == slug)
                         .group_by(Submission.mode)).all()
    counts = {"submit": 0, "run": 0}
    counts.update({mode: int(n) for mode, n in rows})
    return counts
