"""The host-side pieces that keep a hostile result channel bounded, without a sandbox."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from judge.interpret import interpret
from judge.package import TestSpec as Spec
from judge.package import Tolerance
from judge.prepared import PreparedTests
from judge.sandbox.io_loop import RawRun, RunPlan
from judge.verdicts import Verdict, clean_text
from judge.wire import Frame, FrameReader

pytestmark = pytest.mark.adversarial


def frame(header: dict, data: bytes = b"") -> bytes:
    body = json.dumps(dict(header, nbytes=len(data))).encode()
    return struct.pack(">I", len(body)) + body + data


@pytest.mark.parametrize("body", [
    b"[" * 100_000 + b"]" * 100_000,           # deep nesting: RecursionError in json
    json.dumps({"nbytes": [1]}).encode(),      # TypeError in int()
    json.dumps({"nbytes": 1e400}).encode(),    # inf: OverflowError in int()
    json.dumps({"nbytes": "9" * 5000}).encode(),  # beyond int()'s digit limit
    b"\xff\xfe",                               # not UTF-8
    b"[1, 2]",                                 # not an object
])
def test_any_malformed_header_is_a_channel_error_not_an_exception(body):
    r = FrameReader(max_payload=lambda h: 0)
    r.feed(struct.pack(">I", len(body)) + body)
    assert r.error and r.error.startswith("malformed result frame")
    assert len(r.error) < 300


def test_frame_count_is_bounded():
    r = FrameReader(max_payload=lambda h: 0, max_frames=10)
    r.feed(frame({"ev": "log"}) * 1000)
    assert len(r.frames) == 10
    assert r.error == "more result frames than the run can produce"


def _prepared(n: int = 2) -> PreparedTests:
    tests = [Spec(name=f"t{i}", kind="hidden", seed=i, params={}) for i in range(n)]
    return PreparedTests(tests, [{}] * n, [(2,)] * n, [np.zeros(2)] * n)


def _plan(n: int = 2) -> RunPlan:
    return RunPlan(time_ms=1000, memory_bytes=1 << 28, output_cap=1024, ole_limit=16384,
                   expected_sizes=[2] * n)


def test_a_forged_done_with_tests_missing_is_re_not_ie():
    raw = RawRun(frames=[Frame({"ev": "ready"}), Frame({"ev": "module_start"}),
                         Frame({"ev": "begin", "test": 0}), Frame({"ev": "done"})],
                 finished=True)
    res = interpret(raw, _prepared(), Tolerance(atol=1e-6, rtol=1e-6), _plan())
    assert res.verdict is Verdict.RE
    assert "channel was misused" in (res.tests[0].message or "")


def test_text_from_the_sandbox_is_made_storable():
    assert clean_text("ok") == "ok"
    assert clean_text("a\x00b") == "a\ufffdb"
    assert "\ud800" not in clean_text("x\ud800y")
    clean_text("x\ud800y").encode("utf-8")
    assert clean_text("é😀") == "é😀"
