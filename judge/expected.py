"""Expected outputs: computed by the reference in a separate trusted process, cached by content.

The key covers everything the numbers depend on: reference and generator source, the test's
seed and parameters, the precision, and the exact versions of the numeric libraries.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np

from judge.package import Package, TestSpec

LIBRARIES = ("numpy", "jax", "jaxlib", "flax", "torch")


class ReferenceError_(RuntimeError):
    """The reference failed: a package or judge fault, never the submission's."""


@cache
def library_versions() -> dict[str, str]:
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def cache_dir() -> Path:
    configured = os.environ.get("TENSORJUDGE_CACHE_DIR")
    if configured:
        root = Path(configured)
    else:
        import platformdirs

        root = Path(platformdirs.user_cache_dir("tensorjudge"))
    d = root / "expected"
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_key(package: Package, test: TestSpec, float64: bool = False,
             source: str | None = None) -> str:
    """The cache key of one output: of the reference, or of another trusted module of the
    package given by its `source` (a known mistake, judge/mistakes.py)."""
    h = hashlib.sha256()
    h.update((package.reference_source if source is None else source).encode())
    h.update(package.generator_path.read_bytes())
    h.update(package.entry_point.encode())
    h.update(json.dumps(
        {"seed": test.seed, "params": test.params, "float64": float64,
         "versions": library_versions()}, sort_keys=True).encode())
    return h.hexdigest()


def expected_outputs(
    package: Package, tests: list[TestSpec], *, float64: bool = False, background: bool = False
) -> list[np.ndarray]:
    """Flat float64 expected outputs, one per test, in order (`background`: computed at low
    CPU priority, ahead of the first submission)."""
    d = cache_dir()
    keys = [test_key(package, t, float64) for t in tests]
    missing = [(t.name, k) for t, k in zip(tests, keys, strict=True)
               if not (d / f"{k}.npy").is_file()]
    if missing:
        run_trusted(package, [{"name": n, "key": k} for n, k in missing], float64, d,
                    background=background)
    return [np.load(d / f"{k}.npy", allow_pickle=False) for k in keys]


def run_trusted(package: Package, items: list[dict[str, str]], float64: bool, d: Path,
                *, background: bool = False) -> None:
    """Run `judge.reference_run` on `items` ({name, key} and optionally `module`, a package
    file run instead of the reference), in a separate process with the judge's libraries;
    `background`: at low CPU priority (work no job is waiting for)."""
    request = {
        "package": str(package.path),
        "tests": items,
        "float64": float64,
        "out_dir": str(d),
        "background": background,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORJUDGE_")}
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run(
        [sys.executable, "-m", "judge.reference_run"],
        input=json.dumps(request).encode(),
        capture_output=True,
        env=env,
        timeout=900,
        start_new_session=background,
    )
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace")[-3000:]
        raise ReferenceError_(f"the reference of {package.slug} failed:\n{tail}")
