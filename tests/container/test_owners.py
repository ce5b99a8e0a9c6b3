"""Which judge a sandbox container belongs to, and when that judge counts as gone: a judge
container that was started again since the sandbox was made (a worker killed, then restarted
under the same container) is not the process that made it."""

from __future__ import annotations

from datetime import UTC, datetime

from judge.sandbox.container.owners import created_before_start, judge_gone


class _Engine:
    def __init__(self, state: dict | None, sandbox_created: str = ""):
        self.state = state
        self.sandbox_created = sandbox_created

    def inspect_container(self, cid: str) -> dict:
        if cid == "sandbox":
            return {"Created": self.sandbox_created}
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


def test_within_the_second_of_the_start_the_exact_creation_time_decides():
    """The listing's `Created` is in whole seconds: a worker killed while it started a
    sandbox and restarted at once shares that second with it."""
    started = 1_800_000_000.25
    state = {"Running": True, "StartedAt": _iso(started)}
    listed = {"Id": "sandbox", "Created": int(started)}
    assert created_before_start(listed, state, lambda: _iso(started - 0.2))
    assert not created_before_start(listed, state, lambda: _iso(started + 0.1))
    assert not created_before_start(listed, state)  # no exact time: the present life's

    def gone() -> str:
        raise LookupError("sandbox")

    assert not created_before_start(listed, state, gone)
    owner = "container:abc123#mark"
    assert judge_gone(_Engine(state, _iso(started - 0.2)), owner, listed)
    assert not judge_gone(_Engine(state, _iso(started + 0.1)), owner, listed)
