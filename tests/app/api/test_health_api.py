"""GET /healthz (API.md's last row) and /metrics."""

from __future__ import annotations

from tests.app.tj_testlib import FakeJudge


def test_healthz_200(client):
    r = client.get("/healthz")
    assert r.status_code == 200
    h = r.json()
    assert h["status"] == "ok" and h["database"] == "ok"
    assert h["live_workers"] == 0 and h["queue_depth"] == 0


def test_healthz_counts_workers_and_queue(client, alice, workers):
    client.post("/api/v1/submissions", headers=alice, json={"problem": "double", "code": "x=1"})
    assert client.get("/healthz").json()["queue_depth"] == 1
    workers(2, judge_fn=FakeJudge("AC"))
    h = client.get("/healthz").json()
    assert h["live_workers"] == 2
    assert len(h["workers"]) == 2


def test_healthz_database_down_503(client, ctx, monkeypatch):
    from app.services import queue

    def down(_ctx):
        raise ConnectionError("connection refused")

    monkeypatch.setattr(queue, "depth", down)
    r = client.get("/healthz")
    assert r.status_code == 503 and r.json()["status"] == "error"


def test_metrics(client, alice, workers):
    workers(1, judge_fn=FakeJudge("WA"))
    sid = client.post("/api/v1/submissions", headers=alice,
                      json={"problem": "double", "code": "x=1"}).json()["id"]
    assert client.get(f"/api/v1/submissions/{sid}?wait=20", headers=alice).json()["verdict"] \
        == "WA"
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'tensorjudge_queue_depth{status="queued"} 0.0' in text
    assert 'tensorjudge_verdicts_total{verdict="WA"} 1.0' in text
    assert 'tensorjudge_judging_seconds_bucket{le="+Inf"} 1.0' in text
    assert "tensorjudge_judging_seconds_count 1.0" in text
    assert "tensorjudge_live_workers 1.0" in text
