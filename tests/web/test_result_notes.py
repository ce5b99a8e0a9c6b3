"""An accepted result's notes on the submission page, under the verdict, and in the REST
schema."""

from __future__ import annotations

from app.api.schemas import ResultOut
from app.web.routes import templates
from app.web.views import result_context

NOTE = {"kind": "structure", "title": "Your layers have no biases where the statement's have",
        "detail": "Flax starts every bias at zero."}


def _view(result: dict) -> dict:
    return {"id": 3, "problem": "encoder-block", "mode": "submit", "status": "done",
            "verdict": result["verdict"], "result": result}


def test_notes_are_shown_under_the_verdict():
    result = {"verdict": "AC", "score": {"passed": 3, "total": 3}, "tests": [], "notes": [NOTE]}
    html = templates.get_template("_result.html").render(r=result_context(_view(result), []))
    assert html.index("Accepted, with a note") > html.index("3/3 tests passed")
    assert "statement&#39;s have" in html and "Flax starts every bias at zero." in html
    plain = dict(result, notes=[])
    html = templates.get_template("_result.html").render(r=result_context(_view(plain), []))
    assert "with a note" not in html


def test_notes_in_the_rest_schema():
    out = ResultOut.model_validate({"verdict": "AC", "score": {"passed": 1, "total": 1},
                                    "notes": [NOTE]})
    assert out.notes[0].title == NOTE["title"]
    assert ResultOut.model_validate({"verdict": "AC", "score": {}}).notes == []
