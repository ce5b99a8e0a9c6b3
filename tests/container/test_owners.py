"""Which judge a sandbox container belongs to, and when that judge counts as gone: a judge
container that was started again since the sandbox was made (a worker killed, then restarted
under the same container) is not the process that made it."""

from __future__ import annotations

from datetime import UTC, datetime

from judge.sandbox.container.owners import created_before_start, judge_gone


class _Engine:
    def __init__(self, state: dict | None):
        self.state = state

    def inspect_container(self, cid: str) -> dict:
        if self.state is None:
            raise LookupError(cid)
        return {"State": self.state}


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f123Z")


def test_a_sandbox_made_before_its_judge_container_last_started_is_an_earlier_lifes():
    started = 1_800_000_000.0
    state = {"Running": True, "StartedAt": _iso(started)}
    assert created_before_start({"Created": int(started) - 30}, state)
    assert not created_before_start({"Created": int(started) + 5}, state)
    assert not created_before_start({"Created": 0}, {"StartedAt": "not a time"})


def test_judge_gone_for_container_owners():
    started = 1_800_000_000.0
    owner = "container:abc123#mark"
    sandbox = {"Created": int(started) + 5}
    assert not judge_gone(_Engine({"Running": True, "StartedAt": _iso(started)}), owner, sandbox)
    assert judge_gone(_Engine({"Running": False, "StartedAt": _iso(started)}), owner, sandbox)
    assert judge_gone(_Engine(None), owner, sandbox)  # removed
    restarted = {"Running": True, "StartedAt": _iso(started + 60)}
    assert judge_gone(_Engine(restarted), owner, sandbox)
