"""Where the time went, as the learner sees it: a real judgement through the queue and a
worker, its breakdown on the submission page and in the REST result."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.web import views
from tests.app.tj_testlib import AC_CODE, FakeJudge, login
from tests.web.test_pages import wait_done

PARTS = ("queue_ms", "preparation_ms", "tests_ms", "compile_ms", "diagnosis_ms", "rerun_ms",
         "other_ms")


@pytest.fixture(scope="module")
def real_judge():
    """The engine with the real sandbox (the worker fixture's own stands in for none)."""
    from judge.engine import judge
    from judge.sandbox import BwrapConfig, BwrapSandbox, xla_cache

    sandbox = BwrapSandbox(BwrapConfig(xla_cache_dir=xla_cache.ensure_dir(
        xla_cache.default_root())))

    def run(package: Any, code: str, _: Any, **kw: Any) -> Any:
        return judge(package, code, sandbox, **kw)

    return run


@pytest.mark.sandbox
def test_a_judged_submission_says_where_its_time_went(web, client, workers, real_judge):
    workers(1, judge_fn=real_judge)
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"},
                   json=True).json()["id"]
    fragment = wait_done(web, sid)
    assert "Accepted" in fragment

    r = client.get(f"/api/v1/submissions/{sid}", headers=login(client, "alice"))
    assert r.status_code == 200
    result = r.json()["result"]
    t = result["timing"]
    assert set(t) == {*PARTS, "total_ms"}
    assert all(isinstance(t[k], float | int) and t[k] >= 0 for k in (*PARTS, "total_ms"))
    assert abs(sum(t[k] for k in PARTS) - t["total_ms"]) <= 0.5
    # The worker's span holds the judge's: the total is at least what the page calls
    # "judged in", plus the queue.
    assert t["total_ms"] >= result["wall_ms"] + t["queue_ms"] - 0.2
    own = sum(x["time_ms"] or 0.0 for x in result["tests"])
    assert t["tests_ms"] + t["compile_ms"] == pytest.approx(own, abs=0.3)
    assert t["preparation_ms"] > 0 and t["rerun_ms"] == 0 and t["diagnosis_ms"] == 0

    # The page: the total and every part that took any time, beside "judged in".
    page = web.get(f"/submissions/{sid}").text
    assert "judged in" in page
    line = re.search(r'<p class="timing-line">(.*?)</p>', page, re.S)
    assert line is not None
    text = re.sub(r"<[^>]+>", "", line.group(1))
    assert f"From submission to verdict, {views.fmt_ms(t['total_ms'])}:" in text
    for key, words in (("preparation_ms", "preparation"), ("tests_ms", "tests")):
        assert f"{words} {views.fmt_ms(t[key])}" in text
    assert "rerun" not in text and "diagnosis" not in text  # parts that took no time
    bar = re.search(r'<div class="timing-bar"[^>]*>(.*?)</div>', page, re.S)
    assert bar is not None and 'class="t-preparation" style="width:' in bar.group(1)


def test_the_live_panel_says_how_long_it_waited_for_a_worker(web, workers):
    judge = FakeJudge("AC")
    judge.release.clear()
    workers(1, judge_fn=judge)
    web.sign_up("alice")
    web.get("/problems/double")
    sid = web.post("/problems/double/submit", {"code": AC_CODE, "mode": "submit"},
                   json=True).json()["id"]
    assert judge.started.wait(30)
    running = web.get(f"/submissions/{sid}/result").text
    assert re.search(r"being judged \(after [0-9.]+ (ms|s) in the queue\)", running)
    judge.release.set()
    done = wait_done(web, sid)
    # A judge that records no timing: the worker's figures still add up (all "other").
    assert "From submission to verdict" in done and "in the queue)" not in done


def test_the_breakdown_shows_shares_and_skips_what_took_nothing():
    shown = views.timing({"timing": {"queue_ms": 500.0, "preparation_ms": 9200.0,
                                     "tests_ms": 210.0, "compile_ms": 1100.0,
                                     "diagnosis_ms": 0.0, "rerun_ms": 0.0, "other_ms": 990.0,
                                     "total_ms": 12000.0}})
    assert shown is not None and shown["total"] == "12.00 s" and shown["queued"]
    assert [(p["words"], p["text"], p["share"]) for p in shown["parts"]] == [
        ("queue", "500 ms", 4.17), ("preparation", "9.20 s", 76.67), ("tests", "210 ms", 1.75),
        ("compilation", "1.10 s", 9.17), ("other", "990 ms", 8.25)]
    # Results stored before timing was recorded show no breakdown.
    assert views.timing({"verdict": "AC"}) is None and views.timing(None) is None


def test_the_openapi_document_types_the_timing(client):
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    assert "timing" in schemas["ResultOut"]["properties"]
    assert set(schemas["TimingOut"]["properties"]) == {*PARTS, "total_ms"}
