"""The samples shown on a problem's page and in its API detail: each sample test's inputs and
expected output, summarised (shapes, dtypes and the first few values).

They come from running the reference, so they are computed once per version and kept in the
database.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import numpy as np
from sqlalchemy import select

from app.context import Context
from app.db.models import ProblemVersion
from app.services import problems

# The records keep the logger name they had while this lived in app.services.problems.
log = logging.getLogger("tensorjudge.problems")

SAMPLE_VALUES = 8

_samples_locks: dict[int, threading.Lock] = {}
_samples_guard = threading.Lock()


def version_samples(ctx: Context, version_id: int, *,
                    background: bool = False) -> list[dict[str, Any]]:
    """The samples shown on a problem's page, computed once per version (it runs the
    reference; `background`: at low priority) and kept in the database."""
    with _samples_guard:
        lock = _samples_locks.setdefault(version_id, threading.Lock())
    with lock:
        with ctx.db.transaction() as s:
            cached = s.scalar(select(ProblemVersion.samples)
                              .where(ProblemVersion.id == version_id))
        if cached is not None:
            return cached
        from judge import prepare_tests as prepare

        package = problems.load_version(ctx, version_id)
        prepared = prepare(package, samples_only=True, background=background)
        samples = [
            {
                "name": t.name,
                "description": t.description,
                "inputs": {k: summarise(v) for k, v in args.items()},
                "expected": {"shape": list(shape), **_values(expected)},
            }
            for t, args, shape, expected in zip(prepared.tests, prepared.args, prepared.shapes,
                                                prepared.expected, strict=True)
        ]
        with ctx.db.transaction() as s:
            v = s.get(ProblemVersion, version_id)
            assert v is not None
            v.samples = samples
        return samples


def problem_with_samples(ctx: Context, slug: str) -> dict[str, Any]:
    """problems.get_problem plus the samples of that same version under "samples" (computed
    on first use: it runs the reference)."""
    vid = problems.current_version_id(ctx, slug)
    out = problems.problem_at_version(ctx, vid)
    out["samples"] = version_samples(ctx, vid)
    return out


def ready_samples(ctx: Context, slug: str) -> list[dict[str, Any]] | None:
    """The current version's samples if they were computed already, else None (the pages
    then fetch them separately instead of waiting for the reference to run)."""
    vid = problems.current_version_id(ctx, slug)
    with ctx.db.transaction() as s:
        return s.scalar(select(ProblemVersion.samples).where(ProblemVersion.id == vid))


def warm_samples(ctx: Context) -> None:
    """Compute the missing samples of every current version (serve does it in the
    background at start, so the first visitor of a page does not wait for the reference)."""
    latest = problems.latest_version_numbers()
    with ctx.db.transaction() as s:
        ids = list(s.scalars(
            select(ProblemVersion.id)
            .join(latest, (latest.c.problem_id == ProblemVersion.problem_id)
                  & (latest.c.n == ProblemVersion.number))
            .where(ProblemVersion.samples.is_(None))))
    for vid in ids:
        try:
            # At low priority: on a fresh machine the first submissions run meanwhile.
            version_samples(ctx, vid, background=True)
        except Exception as e:  # noqa: BLE001 - a page can still compute them later
            log.warning("samples not computed", extra={"version_id": vid, "error": str(e)})


# --- summarising -------------------------------------------------------------------------


def _num(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.6g}") if np.isfinite(x) else str(x)
    return x


def _values(a: np.ndarray) -> dict[str, Any]:
    flat = np.asarray(a).reshape(-1)
    return {"size": int(flat.size), "values": [_num(x) for x in flat[:SAMPLE_VALUES].tolist()]}


def summarise(value: Any) -> Any:
    """An input as shown to users: arrays by shape, dtype and their first values."""
    if isinstance(value, np.ndarray):
        return {"shape": list(value.shape), "dtype": str(value.dtype), **_values(value)}
    if isinstance(value, dict):
        return {str(k): summarise(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return _num(value.item())
    return _num(value)
