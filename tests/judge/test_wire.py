from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from judge import wire
from judge.inside import runner


def _frame(header: dict, data: bytes = b"") -> bytes:
    h = json.dumps({**header, "nbytes": len(data)}).encode()
    return struct.pack(">I", len(h)) + h + data


def test_frames_parse_incrementally():
    blob = _frame({"ev": "begin", "test": 0}) + _frame(
        {"ev": "result", "test": 0, "dtype": "<f8"}, np.arange(3.0).tobytes())
    r = wire.FrameReader(max_payload=lambda h: 24)
    for i in range(len(blob)):
        r.feed(blob[i : i + 1])
    assert [f.ev for f in r.frames] == ["begin", "result"]
    assert wire.result_array(r.frames[1]).tolist() == [0.0, 1.0, 2.0]


def test_oversized_and_malformed_frames_are_refused():
    r = wire.FrameReader(max_payload=lambda h: 8)
    r.feed(_frame({"ev": "result"}, bytes(16)))
    assert r.error and not r.frames
    r = wire.FrameReader(max_payload=lambda h: 8)
    r.feed(struct.pack(">I", 5) + b"nope!")
    assert r.error and "malformed" in r.error
    r = wire.FrameReader(max_payload=lambda h: 8)
    r.feed(struct.pack(">I", 1 << 30))
    assert r.error


def test_only_plain_data_can_be_sent():
    wire.check_args({"x": np.zeros(3, np.float32), "n": 3, "m": None,
                     "p": {"w": np.ones((2, 2), np.float32)}})
    with pytest.raises(wire.WireError):
        wire.check_args({"x": np.array([object()], dtype=object)})
    with pytest.raises(wire.WireError):
        wire.check_args({"f": print})


def test_job_round_trip_is_raw_bytes_placed_by_the_header():
    args = [
        {"x": np.arange(5, dtype=np.float32), "k": 2, "p": {"w": np.eye(3), "e": np.zeros((0, 4))}},
        {"x": np.array([[True, False]]), "k": 3, "p": {"w": np.arange(6).reshape(2, 3)}},
    ]
    job = wire.encode_job({"code": "x"}, args)
    assert job.startswith(wire.MAGIC)
    (hlen,) = struct.unpack(">Q", job[4:12])
    header = json.loads(job[12 : 12 + hlen])
    blob = job[12 + hlen :]
    assert header["blob_bytes"] == len(blob)
    assert header["tests_args"][0]["v"]["k"] == {"t": "int", "v": 2}
    assert all(d["offset"] % wire.ALIGN == 0 for d in header["arrays"].values())
    arrays = runner._arrays(header["arrays"], blob)
    for i, want in enumerate(args):
        got = runner._rebuild(header["tests_args"][i], arrays)
        assert got["k"] == want["k"]
        for a, b in ((got["x"], want["x"]), (got["p"]["w"], want["p"]["w"])):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    empty = runner._rebuild(header["tests_args"][0], arrays)["p"]["e"]
    assert empty.shape == (0, 4) and empty.dtype == np.float64
