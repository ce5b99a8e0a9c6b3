"""What crosses the sandbox boundary, as data only.

In: one frame on the sandbox's stdin: a JSON header (code, entry point, per-test argument
specs, each array's dtype, shape and offset) and the arrays' raw bytes, viewed inside with
`np.frombuffer`.
Out: frames on a private pipe (never stdout): a length-prefixed JSON header, then for results
raw little-endian float64 bytes of a size the header states. The host parses these with hard
bounds and never unpickles or evaluates anything.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAGIC = b"TJ1\n"
MAX_HEADER = 1 << 20
ALLOWED_DTYPES = {"float32", "float64", "int32", "int64", "bool"}
ALIGN = 64  # each array of a job starts on a boundary any dtype and SIMD load is happy with


class WireError(ValueError):
    pass


def check_args(args: object) -> None:
    """Generator output must be a dict of the value kinds the sandbox can rebuild."""
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        raise WireError("generate() must return a dict with str keys")
    _spec_of(args, "", {}, depth=0)


def _spec_of(value: object, path: str, arrays: dict[str, np.ndarray], depth: int) -> dict:
    if value is None:
        return {"t": "none"}
    if isinstance(value, bool | np.bool_):
        return {"t": "bool", "v": bool(value)}
    if isinstance(value, int | np.integer):
        return {"t": "int", "v": int(value)}
    if isinstance(value, float | np.floating):
        return {"t": "float", "v": float(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.name not in ALLOWED_DTYPES:
            raise WireError(f"{path or 'value'}: dtype {value.dtype} is not allowed")
        key = f"a{len(arrays)}"
        arrays[key] = value
        return {"t": "array", "k": key}
    if isinstance(value, dict) and depth < 2:
        return {
            "t": "dict",
            "v": {str(k): _spec_of(v, f"{path}.{k}", arrays, depth + 1) for k, v in value.items()},
        }
    raise WireError(f"{path or 'value'}: type {type(value).__name__} cannot be sent")


def encode_args(args: dict[str, Any]) -> tuple[dict, dict[str, np.ndarray]]:
    arrays: dict[str, np.ndarray] = {}
    spec = _spec_of(args, "", arrays, depth=0)
    return spec, arrays


def args_digest(args: dict[str, Any]) -> str:
    spec, arrays = encode_args(args)
    h = hashlib.sha256(json.dumps(spec, sort_keys=True).encode())
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def encode_job(header: dict[str, Any], tests_args: list[dict[str, Any]]) -> bytes:
    """The single stdin frame for a sandbox: header with per-test specs and where each array
    lies in the blob that follows (dtype, shape, offset), then the blob: every array's raw
    bytes, each starting on an ALIGN boundary (the runner's `_arrays` reads it). No archive
    format to parse on either side."""
    specs = []
    layout: dict[str, dict[str, Any]] = {}
    chunks: list[bytes] = []
    offset = 0
    for i, args in enumerate(tests_args):
        spec, arrays = encode_args(args)
        renamed = {k: f"t{i}_{k}" for k in arrays}
        specs.append(_rename(spec, renamed))
        for k, a in arrays.items():
            data = np.ascontiguousarray(a).tobytes()
            layout[renamed[k]] = {"dtype": a.dtype.str, "shape": list(a.shape), "offset": offset}
            pad = -len(data) % ALIGN
            chunks += [data, b"\0" * pad]
            offset += len(data) + pad
    blob = b"".join(chunks)
    head = json.dumps({**header, "tests_args": specs, "arrays": layout,
                       "blob_bytes": len(blob)}).encode()
    return MAGIC + struct.pack(">Q", len(head)) + head + blob


def _rename(spec: dict, renamed: dict[str, str]) -> dict:
    if spec["t"] == "array":
        return {"t": "array", "k": renamed[spec["k"]]}
    if spec["t"] == "dict":
        return {"t": "dict", "v": {k: _rename(v, renamed) for k, v in spec["v"].items()}}
    return spec


@dataclass
class Frame:
    header: dict[str, Any]
    data: bytes = b""

    @property
    def ev(self) -> str:
        return str(self.header.get("ev", ""))


@dataclass
class FrameReader:
    """Incremental parser of the result channel, bounded in header and payload size.

    `max_payload(header)` gives the most bytes a frame with that header may carry; anything
    larger, anything malformed, or more than `max_frames` frames (the runner sends a handful
    per test; a flood would only grow the host's memory) marks the channel corrupt and stops
    parsing."""

    max_payload: Any
    frames: list[Frame] = field(default_factory=list)
    error: str | None = None
    max_frames: int | None = None
    _buf: bytearray = field(default_factory=bytearray)

    def feed(self, chunk: bytes) -> None:
        if self.error is not None:
            return
        self._buf += chunk
        while self.error is None:
            if len(self._buf) < 4:
                return
            (hlen,) = struct.unpack(">I", self._buf[:4])
            if hlen > MAX_HEADER:
                self.error = "result frame header too large"
                return
            if len(self._buf) < 4 + hlen:
                return
            try:
                header = json.loads(bytes(self._buf[4 : 4 + hlen]).decode("utf-8"))
                if not isinstance(header, dict):
                    raise ValueError("not an object")
                nbytes = int(header.get("nbytes", 0))
            except (ValueError, TypeError, OverflowError, RecursionError) as e:
                # (UnicodeDecodeError is a ValueError; deep nesting raises RecursionError)
                self.error = f"malformed result frame: {str(e)[:200]}"
                return
            if nbytes < 0 or nbytes > self.max_payload(header):
                self.error = "result frame larger than the output can be"
                return
            if len(self._buf) < 4 + hlen + nbytes:
                return
            if self.max_frames is not None and len(self.frames) >= self.max_frames:
                self.error = "more result frames than the run can produce"
                return
            data = bytes(self._buf[4 + hlen : 4 + hlen + nbytes])
            del self._buf[: 4 + hlen + nbytes]
            self.frames.append(Frame(header, data))


def result_array(frame: Frame) -> np.ndarray:
    """The float64 values of a result frame; the header's shape is only reported, never trusted
    for memory layout."""
    if frame.header.get("dtype") != "<f8" or len(frame.data) % 8:
        raise WireError("result is not float64 data")
    return np.frombuffer(frame.data, dtype="<f8")
