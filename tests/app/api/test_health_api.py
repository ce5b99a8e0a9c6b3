"""GET /healthz (API.md's last row) and /metrics."""

from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from judge.sandbox.job import Kind
from judge.sandbox.pool import PoolFigures
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


class _PreparingPool:
    """A pool of prepared sandboxes whose start-up preparation waits for `gate` (and fails
    when `fail`), with what /healthz reads of a real one."""

    def __init__(self, gate: threading.Event, fail: bool = False):
        self.gate, self.fail = gate, fail
        self.prewarmed: list[Kind] = []

    def fill_compile_cache(self, kind: Kind, memory: int) -> None:
        self.gate.wait(30)

    def prewarm(self, kind: Kind, memory: int) -> None:
        if self.fail:
            raise RuntimeError("no sandbox today")
        self.prewarmed.append(kind)

    def wait_ready(self, count: int, timeout_s: float) -> bool:
        return False

    def figures(self) -> PoolFigures:
        return PoolFigures(idle=0, spawning=0, idle_memory_mb=0, hits=0, waits=0, cold=0,
                           spawned=0, discarded=0, split=0)


def _prepared_after(c: TestClient, timeout: float = 60) -> float | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = c.get("/healthz").json()["sandbox_pool"]["prepared_after_s"]
        if got is not None:
            return got
        time.sleep(0.05)
    return None


@pytest.mark.parametrize("fail", [False, True], ids=["prepared", "preparation-failed"])
def test_healthz_says_when_the_start_up_preparation_is_over(ctx, fail):
    gate = threading.Event()
    pool = _PreparingPool(gate, fail)
    app = create_app(ctx.settings, ctx=ctx, workers=1, sandbox=pool, judge_fn=FakeJudge("AC"))
    with TestClient(app) as c:
        time.sleep(0.3)
        assert c.get("/healthz").json()["sandbox_pool"]["prepared_after_s"] is None
        gate.set()
        after = _prepared_after(c)
        assert after is not None and after >= 0.3
        # Over whether it succeeded or not; when it did, every problem's kinds were prepared.
        assert bool(pool.prewarmed) is not fail
