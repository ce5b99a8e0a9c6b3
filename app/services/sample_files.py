"""The samples to take home: every sample test's inputs and expected output, whole, as `.npz`
and as JSON, and the checker (app/services/sample_checker.py) that runs a solution on them
with the judge's comparison. Hidden tests never leave the server: only the tests the package
marks `sample` are prepared here.

The document (both downloads hold the same one; the .npz keeps its arrays as members):

    {"format": "tensorjudge-samples/1", "problem", "version", "entry_point",
     "tolerance": {"atol", "rtol"},
     "tests": [{"name", "description", "inputs": {arg: value}, "expected": value,
                "shape": [output shape]}]}

A value is a JSON number, boolean or null, {"float": "nan"|"inf"|"-inf"},
{"dict": {key: value}}, and an array {"array": {"dtype", "shape", "data": [flat values]}}
in the JSON file or {"npz": member name} in the .npz.
"""

from __future__ import annotations

import io
import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.context import Context
from app.services import problems

FORMAT = "tensorjudge-samples/1"
CHECKER_PATH = Path(__file__).with_name("sample_checker.py")

_CACHE_SIZE = 16
_cache: dict[str, SampleFiles] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class SampleFiles:
    slug: str
    json_bytes: bytes
    npz_bytes: bytes


def _number(x: Any) -> Any:
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return {"float": str(x)}
    return x


class _Encoder:
    """Turns a test's values into the document's values, gathering the .npz members."""

    def __init__(self) -> None:
        self.members: dict[str, np.ndarray] = {}

    def value(self, v: Any, key: str, *, npz: bool) -> Any:
        if isinstance(v, np.ndarray):
            if npz:
                self.members[key] = v
                return {"npz": key}
            data = [x if not isinstance(x, float) or math.isfinite(x) else str(x)
                    for x in v.reshape(-1).tolist()]
            return {"array": {"dtype": str(v.dtype), "shape": list(v.shape), "data": data}}
        if isinstance(v, dict):
            return {"dict": {str(k): self.value(x, f"{key}/{k}", npz=npz)
                             for k, x in v.items()}}
        return _number(v)


def _document(info: dict[str, Any], prepared: Any, *, npz: bool
              ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    enc = _Encoder()
    tests = []
    for t, args, shape, expected in zip(prepared.tests, prepared.args, prepared.shapes,
                                        prepared.expected, strict=True):
        tests.append({
            "name": t.name,
            "description": t.description,
            "inputs": {k: enc.value(v, f"{t.name}/{k}", npz=npz) for k, v in args.items()},
            "expected": enc.value(np.asarray(expected, dtype=np.float64).reshape(-1),
                                  f"{t.name}/expected", npz=npz),
            "shape": [int(s) for s in shape],
        })
    tol = info["tolerance"]
    doc = {"format": FORMAT, "problem": info["slug"], "version": info["version"],
           "entry_point": info["entry_point"],
           "tolerance": {"atol": tol["atol"], "rtol": tol["rtol"]}, "tests": tests}
    return doc, enc.members


def _build(ctx: Context, version_id: int, info: dict[str, Any]) -> SampleFiles:
    from judge import prepare_tests as prepare

    prepared = prepare(problems.load_version(ctx, version_id), samples_only=True)
    as_json, _ = _document(info, prepared, npz=False)
    doc, members = _document(info, prepared, npz=True)
    raw = io.BytesIO()
    arrays: dict[str, Any] = {"__samples__": np.array(json.dumps(doc)), **members}
    np.savez_compressed(raw, **arrays)
    return SampleFiles(info["slug"], json.dumps(as_json, indent=1).encode(), raw.getvalue())


def sample_files(ctx: Context, slug: str) -> SampleFiles:
    """The current version's downloads, prepared once per package content (it runs the
    reference)."""
    vid = problems.current_version_id(ctx, slug)
    info = problems.problem_at_version(ctx, vid)
    key = info["content_hash"]
    with _lock:
        files = _cache.get(key)
    if files is None:
        files = _build(ctx, vid, info)
        with _lock:
            if len(_cache) >= _CACHE_SIZE:
                _cache.pop(next(iter(_cache)))  # the oldest
            _cache[key] = files
    return files


def checker_source(slug: str) -> str:
    """The checker, its default samples file named after the problem's .npz download."""
    source = CHECKER_PATH.read_text(encoding="utf-8")
    return source.replace('DEFAULT_SAMPLES = "samples.npz"',
                          f'DEFAULT_SAMPLES = "{download_name(slug, "npz")}"', 1)


def download_name(slug: str, ext: str) -> str:
    return f"{slug}-samples.{ext}"
