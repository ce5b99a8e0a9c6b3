"""Turning service data into what the templates show: verdicts in words, numbers, the
per-test table and the heatmap of a submission."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.web import heatmap
from judge import VERDICT_WORDS, Verdict

STATIC_DIR = Path(__file__).resolve().parents[1] / "static"

# The one inline script of the pages (marks that JavaScript runs, before the first paint),
# allowed by its hash in the Content-Security-Policy; every other script is a file of /static.
INLINE_JS = 'document.documentElement.classList.add("js");'
_INLINE_HASH = base64.b64encode(hashlib.sha256(INLINE_JS.encode()).digest()).decode()
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; "
        f"script-src 'self' 'sha256-{_INLINE_HASH}'; "
        # KaTeX and CodeMirror set inline styles.
        "style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; font-src 'self'; connect-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

WORDS: dict[str, str] = {v.value: w for v, w in VERDICT_WORDS.items()}
# CSS class per verdict: the colour goes with the words, never instead of them.
KIND: dict[str, str] = {
    "AC": "ok", "WA": "bad", "TLE": "limit", "MLE": "limit", "OLE": "limit",
    "RE": "crash", "CE": "compile", "IE": "internal",
}
STATUS_WORDS = {"queued": "Queued", "running": "Running", "done": "Done"}
# The history's verdict filter: every verdict, then those not judged yet.
VERDICT_FILTERS = [*WORDS.items(), ("pending", "Not judged yet")]
DIFFICULTY_ORDER = {"easy": 0, "medium": 1, "hard": 2}


def verdict_words(code: str | None) -> str:
    if code is None:
        return "Not run"
    return WORDS.get(code, code)


def verdict_kind(code: str | None) -> str:
    return KIND.get(code or "", "pending")


def fmt_num(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return heatmap.fmt(x)
    return str(x)


def fmt_value(x: Any) -> str:
    """A sample's scalar input as Python would write it."""
    if x is None or isinstance(x, bool):
        return repr(x)
    return fmt_num(x)


def fmt_ms(x: float | None) -> str:
    if x is None:
        return "–"
    if x >= 1000:
        return f"{x / 1000:.2f} s"
    if x >= 10:
        return f"{x:.0f} ms"
    return f"{x:.1f} ms" if x >= 1 else f"{x:.2f} ms"


def fmt_err(x: float | None, compared: bool) -> str:
    """An error figure; None means NaN/inf when the output was compared at all."""
    if not compared:
        return "–"
    return "NaN/inf" if x is None else heatmap.fmt(x)


def parse_time(value: str | datetime | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(value)


def fmt_time(value: str | datetime | None) -> str:
    t = parse_time(value)
    return "–" if t is None else t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(value: str | datetime | None) -> str:
    t = parse_time(value)
    return "" if t is None else t.astimezone(UTC).isoformat()


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


@lru_cache(maxsize=64)
def _asset_version(path: str, mtime_ns: int) -> str:
    return hashlib.sha256((STATIC_DIR / path).read_bytes()).hexdigest()[:10]


def asset(path: str) -> str:
    """/static URL of a file with a content hash, so browsers may cache it for long."""
    f = STATIC_DIR / path
    try:
        v = _asset_version(path, f.stat().st_mtime_ns)
    except FileNotFoundError:
        v = "missing"
    return f"/static/{path}?v={v}"


def default_starter(entry_point: str, signature: str) -> str:
    """Starter code for a package without `starter.py`: the entry function's header, with the
    parameter names taken from the signature (`f(x: (N, M), k: int) -> ...`)."""
    names: list[str] = []
    start = signature.find("(")
    if signature.startswith(entry_point) and start >= 0:
        depth, current = 0, ""
        for ch in signature[start + 1:]:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                if depth == 0:
                    names.append(current)
                    break
                depth -= 1
            if ch == "," and depth == 0:
                names.append(current)
                current = ""
            else:
                current += ch
    params = [n.split(":")[0].split("=")[0].strip() for n in names]
    params = [p for p in params if p.isidentifier()]
    return (f"def {entry_point}({', '.join(params)}):\n"
            f"    raise NotImplementedError(\"{entry_point}: write it, then Run\")\n")


# --- the result of a submission ----------------------------------------------------------


def test_rows(result: dict[str, Any] | None, pending: list[str], status: str,
              progress: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    if result is None:
        # Being judged: the tests done so far, live, then the ones still to come.
        # `pending` names every test in order; tests judged in two sandboxes at once finish
        # out of order, so each judged one takes its own place.
        done = {r["name"]: r for r in test_rows({"tests": progress or []}, [], "done")}
        words = "Running" if status == "running" else "Waiting"
        rows = [done.pop(n) if n in done else
                {"name": n, "verdict": None, "words": words, "kind": "pending", "pending": True}
                for n in pending]
        return list(done.values()) + rows
    rows = []
    for t in result.get("tests", []):
        v = t.get("verdict")
        compared = t.get("mismatches") is not None
        rows.append({
            "name": t.get("name", ""),
            "verdict": v,
            "words": verdict_words(v),
            "kind": verdict_kind(v) if v else "notrun",
            "time": fmt_ms(t.get("time_ms")),
            "abs_err": fmt_err(t.get("max_abs_err"), compared),
            "rel_err": fmt_err(t.get("max_rel_err"), compared),
            "mismatches": "–" if t.get("mismatches") is None else str(t["mismatches"]),
            "message": t.get("message") or "",
            "has_grid": bool(t.get("error_grid")),
            "pending": False,
        })
    return rows


def pick_heatmap_test(result: dict[str, Any] | None, wanted: str | None
                      ) -> dict[str, Any] | None:
    """The test whose picture is shown: the one asked for, else the first wrong answer
    with an error grid."""
    if not result:
        return None
    with_grid = [t for t in result.get("tests", []) if t.get("error_grid")]
    for t in with_grid:
        if wanted is not None and t.get("name") == wanted:
            return t
    return with_grid[0] if with_grid else None


FINDING_KIND_WORDS = {
    "location": "Where",
    "known-mistake": "Known mistake",
    "parameters": "Parameters",
    "property": "Property",
    "numeric": "Numbers",
    "error": "Error",
}


def findings(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The result's diagnosis as the "What went wrong" panel lists it (most certain first,
    as stored)."""
    out = []
    for f in (result or {}).get("diagnosis") or []:
        if not isinstance(f, dict) or not f.get("title"):
            continue
        kind = str(f.get("kind") or "")
        out.append({"kind": kind, "kind_words": FINDING_KIND_WORDS.get(kind, kind),
                    "title": str(f["title"]), "detail": str(f.get("detail") or ""),
                    "tests": [str(t) for t in f.get("tests") or []],
                    "parts": [{"title": str(p.get("title") or ""), "agrees": p.get("agrees")}
                              for p in f.get("parts") or [] if isinstance(p, dict)]})
    return out


# The parts of a result's `timing`, in the order they happen, as the page names them.
TIMING_PARTS = (("queue", "queue"), ("preparation", "preparation"), ("tests", "tests"),
                ("compile", "compilation"), ("rerun", "rerun"), ("diagnosis", "diagnosis"),
                ("other", "other"))


def timing(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The result's `timing` as the breakdown line and bar show it: the parts that took any
    time, each with its share of the total; None for results recorded without one."""
    t = (result or {}).get("timing")
    if not isinstance(t, dict) or not isinstance(t.get("total_ms"), int | float):
        return None
    total = float(t["total_ms"])
    if total <= 0:
        return None
    parts = []
    for key, words in TIMING_PARTS:
        ms = t.get(f"{key}_ms")
        if isinstance(ms, int | float) and ms >= 0.05:
            parts.append({"key": key, "words": words, "text": fmt_ms(ms),
                          "share": round(min(100.0 * ms / total, 100.0), 2)})
    return {"total": fmt_ms(total), "queued": t.get("queue_ms") is not None, "parts": parts}


def notes(result: dict[str, Any] | None) -> list[dict[str, str]]:
    """The result's notes (facts an accepted verdict does not depend on), as stored."""
    return [{"title": str(n["title"]), "detail": str(n.get("detail") or "")}
            for n in (result or {}).get("notes") or [] if isinstance(n, dict) and n.get("title")]


def result_context(view: dict[str, Any], pending: list[str], wanted: str | None = None
                   ) -> dict[str, Any]:
    """Everything `_result.html` shows of a submission (the dict of submissions.get)."""
    status = view["status"]
    result = view.get("result") if status == "done" else None
    verdict = view.get("verdict") if status == "done" else None
    test = pick_heatmap_test(result, wanted)
    hm = heatmap.build(test) if test else None
    score = (result or {}).get("score") or view.get("score")
    return {
        "id": view["id"],
        "problem": view["problem"],
        "mode": view["mode"],
        "status": status,
        "status_words": STATUS_WORDS.get(status, status),
        "verdict": verdict,
        "verdict_words": verdict_words(verdict) if verdict else STATUS_WORDS.get(status),
        "kind": verdict_kind(verdict) if verdict else "pending",
        "score": score,
        "rows": test_rows(result, pending, status, view.get("progress")),
        "message": (result or {}).get("message"),
        "stdout": (result or {}).get("stdout") or "",
        "stderr": (result or {}).get("stderr") or "",
        "wall_ms": (result or {}).get("wall_ms"),
        "timing": timing(result),
        "queue_ms": view.get("queue_ms") if status == "running" else None,
        "diagnosis": findings(result),
        "notes": notes(result),
        "environment": (result or {}).get("environment") or None,
        "heatmap": hm,
        "heatmap_test": test,
        "multiple_grids": sum(1 for t in (result or {}).get("tests", [])
                              if t.get("error_grid")) > 1,
        "created_at": view.get("created_at"),
        "finished_at": view.get("finished_at"),
        "user": view.get("user"),
        "attempts": view.get("attempts"),
        # An exam hides the details until then (app/services/scope.py).
        "veiled_until": view.get("veiled_until"),
    }


def is_verdict(code: str) -> bool:
    try:
        Verdict(code)
    except ValueError:
        return False
    return True
