"""Rendering without a server: statements (Markdown with math), the heatmap, the per-test
table, and the built front-end assets."""

from __future__ import annotations

import hashlib
import re
from html import unescape
from pathlib import Path

import pytest
from jinja2 import Environment, FileSystemLoader

from app.settings import REPO_ROOT
from app.web import heatmap, views
from app.web.markdown import render_statement, strip_title
from tests.conftest import FIXTURES

STATEMENTS = sorted((REPO_ROOT / "problems").glob("*/statement.md")) + [
    FIXTURES / "double" / "statement.md"]


def visible_text_outside_math_and_code(html: str) -> str:
    html = re.sub(r'<(span|div) class="math [^"]*">.*?</\1>', "", html, flags=re.S)
    html = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", "", html))


@pytest.mark.parametrize("path", STATEMENTS, ids=lambda p: p.parent.name)
def test_statement_math_is_kept_for_katex(path: Path):
    source = path.read_text()
    html = render_statement(strip_title(source, ""))
    assert html.count('class="math ') >= 1
    assert "$" not in visible_text_outside_math_and_code(html)
    # The TeX inside is untouched by Markdown: no emphasis from `_`, escapes kept.
    for tex in re.findall(r'class="math [^"]*">(.*?)</', html, flags=re.S):
        assert "<em>" not in tex and "<strong>" not in tex


def test_statement_markdown_features():
    html = render_statement(
        "Text with `code $x$` and $a_1 * b_2$.\n\n$$\n\\sum_i x_i\n$$\n\n"
        "| a | b |\n|---|---|\n| $x$ | `y` |\n\n<script>alert(1)</script>\n")
    assert "<code>code $x$</code>" in html  # dollars in code stay code
    assert '<span class="math math-inline">a_1 * b_2</span>' in html
    assert '<div class="math math-display">\\sum_i x_i</div>' in html
    assert '<div class="table-scroll"><table>' in html
    assert "<script>" not in html  # raw HTML is off, even in statements


def test_strip_title():
    assert strip_title("# Title\n\nBody", "Title") == "Body"
    assert strip_title("Body only", "Title") == "Body only"


# --- the heatmap ---------------------------------------------------------------------------


def wa_test(grid, shape, worst, got=0.12, want=0.57, **kw):
    return {"name": "t", "verdict": "WA", "error_grid": grid, "shape": shape,
            "worst_index": worst, "got": got, "want": want, **kw}


def test_heatmap_2d():
    grid = [[0.0, 0.1, 0.2], [0.3, 0.9, 0.0]]
    hm = heatmap.build(wa_test(grid, [2, 3], [1, 1]))
    assert hm is not None
    assert hm.label.startswith("Error heatmap of |got − want| over the (2, 3) output")
    assert "the worst element is at [1, 1] (got 0.12, want 0.57)" in hm.label
    assert 'role="img"' in hm.svg and "aria-label=" in hm.svg
    assert hm.worst_cell == (1, 1) and hm.svg.count("<rect") >= 6
    assert hm.largest[0] == {"positions": "1", "features": "1", "error": 0.9}


def test_heatmap_3d_downsampled_with_nan():
    # (B=2, T=50, D=100): 100 positions x 100 features, pooled by 3 x 3 into 34 x 34 cells.
    grid = [[0.5] * 34 for _ in range(34)]
    grid[20][33] = -1.0
    hm = heatmap.build(wa_test(grid, [2, 50, 100], [1, 10, 99], got=None, want=1.0))
    assert hm is not None and hm.row_step == 3 and hm.col_step == 3
    assert hm.worst_cell == ((50 + 10) // 3, 99 // 3)
    assert "drawn as 100 positions by 100 features" in hm.label
    assert "hatched cells are NaN or infinite" in hm.label and "got NaN/inf" in hm.label
    assert hm.has_nan and hm.largest[0]["error"] is None
    assert hm.largest[0]["positions"] == "60–62" and hm.largest[0]["features"] == "99–99"


def test_heatmap_needs_a_grid():
    assert heatmap.build({"name": "t", "verdict": "WA", "error_grid": None}) is None
    assert heatmap.build(wa_test([], [0], [])) is None


def test_heatmap_colours_are_ordered():
    def lum(c: str) -> float:
        r, g, b = (int(c[i:i + 2], 16) for i in (1, 3, 5))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    steps = [lum(heatmap.colour(t / 10)) for t in range(11)]
    assert steps == sorted(steps, reverse=True)  # darker is further off


# --- the result panel ------------------------------------------------------------------------

TEMPLATES = REPO_ROOT / "app" / "templates"


def render_result(view, pending=()):
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True)
    env.globals.update(verdict_words=views.verdict_words, verdict_kind=views.verdict_kind)
    env.filters.update(num=views.fmt_num, ms=views.fmt_ms, when=views.fmt_time, iso=views.iso,
                       pct=views.pct)
    return env.get_template("_result.html").render(r=views.result_context(view, list(pending)))


def view_of(result, status="done"):
    return {"id": 7, "problem": "double", "mode": "submit", "status": status,
            "verdict": result["verdict"] if result else None, "result": result,
            "created_at": "2026-01-01T00:00:00+00:00"}


@pytest.mark.parametrize("code", ["AC", "WA", "TLE", "MLE", "RE", "CE", "OLE", "IE"])
def test_verdicts_in_words(code):
    words = {"AC": "Accepted", "WA": "Wrong Answer", "TLE": "Time Limit Exceeded",
             "MLE": "Memory Limit Exceeded", "RE": "Runtime Error", "CE": "Compile Error",
             "OLE": "Output Limit Exceeded", "IE": "Internal Error"}[code]
    result = {"verdict": code, "score": {"passed": 0, "total": 1}, "message": None,
              "tests": [{"name": "sample-1", "verdict": code, "time_ms": 1.5}]}
    html = render_result(view_of(result))
    assert html.count(words) >= 2  # the submission's verdict and the test's


def test_untrusted_text_is_escaped():
    evil = "<img src=x onerror=alert(1)>"
    result = {"verdict": "RE", "score": {"passed": 0, "total": 2}, "message": evil,
              "stdout": evil, "stderr": evil,
              "tests": [{"name": evil, "verdict": "RE", "message": evil},
                        {"name": "b", "verdict": None}]}
    html = render_result(view_of(result))
    assert evil not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "Not run" in html


def test_pending_rows():
    html = render_result(view_of(None, status="running"), pending=["sample-1", "hidden-1"])
    assert 'data-status="running"' in html and "hidden-1" in html and "Running" in html


# --- the built assets ------------------------------------------------------------------------


def web_sources_hash() -> str:
    """As `web_hash` in ./dev: sha256sum lines of every file of web/ but node_modules,
    sorted by path, hashed again."""
    web = REPO_ROOT / "web"
    files = sorted((p for p in web.rglob("*")
                    if p.is_file() and p.relative_to(web).parts[0] != "node_modules"),
                   key=lambda p: p.relative_to(REPO_ROOT).as_posix().encode())
    lines = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  "
                    f"{p.relative_to(REPO_ROOT).as_posix()}\n" for p in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def test_built_assets_match_their_sources():
    vendor = REPO_ROOT / "app" / "static" / "vendor"
    stamp = (vendor / "SOURCE_HASH").read_text().strip()
    assert stamp == web_sources_hash(), (
        "web/ changed since app/static/vendor was built: run ./dev web and commit the result")
    for f in ("editor.js", "katex/katex.min.js", "katex/katex.min.css", "fonts/fonts.css"):
        assert (vendor / f).is_file(), f
    for css in ("katex/katex.min.css", "fonts/fonts.css"):
        text = (vendor / css).read_text()
        for url in re.findall(r"url\(([^)]+)\)", text):
            assert (vendor / css).parent.joinpath(url.strip("'\"")).is_file(), url


def test_live_rows_keep_the_test_order_when_parts_finish_out_of_order():
    """A Submit cut across two sandboxes reports tests 0, 1, 4, 5 before 2 and 3."""
    names = [f"t{i}" for i in range(6)]
    progress = [{"name": n, "verdict": "AC", "time_ms": 1.0} for n in ("t0", "t1", "t4", "t5")]
    rows = views.test_rows(None, names, "running", progress)
    assert [r["name"] for r in rows] == names
    assert [r["pending"] for r in rows] == [False, False, True, True, False, False]
