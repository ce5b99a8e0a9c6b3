"""The submission page's "What went wrong" panel and the record of what judged a result."""

from __future__ import annotations

import html
import re

from app.web.views import result_context
from tests.app.tj_testlib import AC_CODE, WA_CODE
from tests.web.conftest import Browserish
from tests.web.test_pages import wait_done


def _judged(web: Browserish, code: str) -> tuple[int, str]:
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": code, "mode": "submit"},
                   json=True).json()["id"]
    return sid, wait_done(web, sid)


def test_wrong_answer_shows_what_went_wrong_above_the_tests(web, workers):
    workers(1)  # real judging: the fixture problem's bank names its known mistake
    sid, fragment = _judged(web, WA_CODE)
    assert "Wrong Answer" in fragment
    assert "What went wrong" in fragment
    text = html.unescape(fragment)
    assert "Adds one instead of doubling" in text
    assert "the task is to return 2 * x" in text
    # Above the test table, and the tests it explains are listed.
    assert fragment.index("What went wrong") < fragment.index('class="test-table"')
    panel = fragment[fragment.index("What went wrong"):fragment.index('class="test-table"')]
    assert "<code>hidden-1</code>" in panel
    # What judged it, on the page.
    page = web.get(f"/submissions/{sid}").text
    assert "Judged with" in page and "tensorjudge" in page
    assert re.search(r"numpy \d", page) and "bwrap" in page


def test_accepted_has_no_panel(web, workers):
    workers(1)
    _, fragment = _judged(web, AC_CODE)
    assert "Accepted" in fragment
    assert "What went wrong" not in fragment


def test_openapi_documents_diagnosis_and_environment(web):
    schemas = web.client.get("/openapi.json").json()["components"]["schemas"]
    result = schemas["ResultOut"]["properties"]
    assert "diagnosis" in result and "environment" in result
    assert set(schemas["FindingOut"]["properties"]) >= {"kind", "title", "detail", "tests"}
    assert set(schemas["EnvironmentOut"]["properties"]) >= {
        "problem_version", "judge_version", "libraries", "sandbox"}


def _view(result: dict) -> dict:
    return {"id": 7, "problem": "double", "mode": "submit", "status": "done", "verdict": "WA",
            "result": result}


def test_panel_lists_findings_in_order_and_skips_malformed_ones():
    ctx = result_context(_view({
        "verdict": "WA", "score": {"passed": 0, "total": 1}, "tests": [],
        "diagnosis": [
            {"kind": "known-mistake", "title": "First", "detail": "d1", "tests": ["t1"]},
            {"kind": "numeric", "title": "Second", "detail": "d2", "tests": []},
            {"kind": "numeric"},  # no title: not shown
            "junk",
        ],
    }), [])
    assert [f["title"] for f in ctx["diagnosis"]] == ["First", "Second"]
    assert ctx["diagnosis"][0]["kind_words"] == "Known mistake"


def test_results_stored_before_diagnosis_still_render():
    ctx = result_context(_view({"verdict": "WA", "score": {"passed": 0, "total": 1},
                                "tests": []}), [])
    assert ctx["diagnosis"] == [] and ctx["environment"] is None


def test_a_location_is_drawn_as_the_blocks_sub_layers_with_the_wrong_one_marked():
    from app.web.routes import templates

    parts = [{"name": "self-attention", "title": "The self-attention", "agrees": True},
             {"name": "cross-attention", "title": "The cross-attention", "agrees": False},
             {"name": "rest", "title": "The residual stream", "agrees": True}]
    result = {"verdict": "WA", "score": {"passed": 0, "total": 1}, "tests": [],
              "diagnosis": [{"kind": "location", "title": "The cross-attention does not "
                             "compute what the statement's does", "detail": "d",
                             "tests": ["t1"], "parts": parts}]}
    ctx = result_context(_view(result), [])
    assert ctx["diagnosis"][0]["kind_words"] == "Where"
    fragment = templates.get_template("_result.html").render(r=ctx)
    boxes = re.findall(r'<li class="block-part (part-\w+)">([^<]+)', fragment)
    assert boxes == [("part-ok", "The self-attention"), ("part-wrong", "The cross-attention"),
                     ("part-ok", "The residual stream")]
    assert fragment.count('class="block-arrow"') == 2
    assert "The cross-attention<span class=\"visually-hidden\">: does not agree" in fragment
