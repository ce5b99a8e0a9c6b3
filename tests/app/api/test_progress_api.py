"""Tests reach the reader as they are judged: a running submission lists the tests done so
far (`progress`), and the events stream sends one event per test."""

from __future__ import annotations

import time

SLOW_AC = (
    "import time\n"
    "def double(x):\n"
    "    time.sleep(0.4)\n"
    "    return (2 * x).reshape(-1)\n"
)


def test_running_submission_shows_tests_so_far(client, alice, workers):
    workers(1)  # the real sandbox
    sid = client.post("/api/v1/submissions", headers=alice,
                      json={"problem": "double", "code": SLOW_AC, "mode": "submit"}).json()["id"]
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        view = client.get(f"/api/v1/submissions/{sid}", headers=alice).json()
        if view["status"] == "running" and view.get("progress"):
            seen.add(len(view["progress"]))
            assert all(t["verdict"] == "AC" for t in view["progress"])
        if view["status"] == "done":
            break
        time.sleep(0.05)
    assert view["status"] == "done" and view["verdict"] == "AC"
    assert view["progress"] is None  # the final result replaces it
    # Partial states were visible before the end (3 tests, 0.4 s each).
    assert seen & {1, 2}, seen


def test_events_stream_one_event_per_test(client, alice, workers):
    workers(1)
    sid = client.post("/api/v1/submissions", headers=alice,
                      json={"problem": "double", "code": SLOW_AC, "mode": "submit"}).json()["id"]
    counts = []
    with client.stream("GET", f"/api/v1/submissions/{sid}/events", headers=alice) as r:
        assert r.status_code == 200
        import json

        for line in r.iter_lines():
            if line.startswith("data: "):
                view = json.loads(line[6:])
                counts.append((view["status"], len(view.get("progress") or [])))
                if view["status"] == "done":
                    break
    running = [n for status, n in counts if status == "running"]
    assert running and max(running) >= 2, counts
    assert counts[-1][0] == "done"
