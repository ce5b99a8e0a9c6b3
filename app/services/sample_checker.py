"""tensorjudge sample checker: runs your solution on a problem's sample tests at home.

    python check.py my_solution.py SLUG-samples.npz      (or SLUG-samples.json)

It imports your file, calls the problem's function on each sample test's inputs, and compares
the output with the expected one the way the judge does: every element must satisfy
|got - want| <= atol + rtol * |want| (the problem's tolerance), NaN or an infinity never
passes, and a failure names the worst element. It needs only NumPy (and whatever framework
your solution imports). It checks the samples only: Submit on the site runs the hidden tests
too, under the time and memory limits.

Exit status: 0 when every sample passes, 1 when one does not, 2 when the files cannot be read.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import traceback
from typing import Any

import numpy as np

FORMAT = "tensorjudge-samples/1"
DEFAULT_SAMPLES = "samples.npz"  # the site names the download after its problem


# --- reading the samples ---------------------------------------------------------------


def _decode(value: Any, npz: Any) -> Any:
    """A stored input back as the judge passes it: arrays with their dtype, dicts of them,
    plain numbers, booleans and None."""
    if isinstance(value, dict):
        if "npz" in value:
            return np.array(npz[value["npz"]])
        if "array" in value:
            a = value["array"]
            data = [float(x) if isinstance(x, str) else x for x in a["data"]]
            return np.array(data, dtype=a["dtype"]).reshape(a["shape"])
        if "dict" in value:
            return {k: _decode(v, npz) for k, v in value["dict"].items()}
        if "float" in value:
            return float(value["float"])
    return value


def load_samples(path: str) -> tuple[dict[str, Any], Any]:
    """The samples document and, for an .npz download, the archive holding its arrays."""
    if path.endswith(".npz"):
        npz = np.load(path, allow_pickle=False)
        return json.loads(str(npz["__samples__"])), npz
    with open(path, encoding="utf-8") as f:
        return json.load(f), None


# --- the comparison (the judge's rules) ------------------------------------------------


def as_float64(out: Any, size: int) -> tuple[np.ndarray | None, str | None]:
    """The output as flat float64, or why it cannot be compared."""
    kind = type(out).__module__ or ""
    if kind.startswith("torch"):
        out = out.detach().cpu().numpy()
    elif kind.startswith(("jax", "jaxlib")):
        out = np.asarray(out)
    try:
        arr = np.asarray(out)
    except Exception as e:  # noqa: BLE001 - any failure is the answer
        return None, f"the output could not be read as an array: {type(e).__name__}: {e}"
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        return None, f"the output is not numeric (dtype {arr.dtype})"
    if arr.size != size:
        return None, f"the output has {arr.size} elements, the expected output has {size}"
    return np.ascontiguousarray(arr, dtype=np.float64).reshape(-1), None


def check(got: np.ndarray, want: np.ndarray, shape: list[int], atol: float,
          rtol: float) -> tuple[bool, str]:
    """Whether every element is within tolerance, and the figures the judge reports."""
    want = np.asarray(want, dtype=np.float64).reshape(-1)
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got - want)
        within = err <= atol + rtol * np.abs(want)  # False for NaN: it never passes
    failing = ~within
    n_bad = int(failing.sum())
    finite = np.where(np.isfinite(err), err, np.inf)
    if n_bad == 0:
        top = float(finite.max()) if finite.size else 0.0
        return True, f"max abs error {top:.3g}"
    i = int(np.argmax(np.where(failing, finite, -1.0)))
    at = ", ".join(str(int(k)) for k in np.unravel_index(i, tuple(shape)))
    allowed = atol + rtol * abs(want[i])
    return False, (f"{n_bad} of {want.size} values differ; worst at [{at}]: got {got[i]:.6g}, "
                   f"want {want[i]:.6g} (allowed {allowed:.2g}).")


# --- running ---------------------------------------------------------------------------


def load_function(solution: str, entry_point: str) -> Any:
    spec = importlib.util.spec_from_file_location("solution", solution)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {solution}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entry = getattr(module, entry_point, None)
    if not callable(entry):
        raise SystemExit(f"{solution} does not define `{entry_point}`")
    return entry


def run(solution: str, samples_path: str) -> int:
    try:
        doc, npz = load_samples(samples_path)
    except (OSError, ValueError, KeyError) as e:
        print(f"cannot read {samples_path}: {e}", file=sys.stderr)
        return 2
    if doc.get("format") != FORMAT:
        print(f"{samples_path} is not a tensorjudge samples file ({FORMAT})", file=sys.stderr)
        return 2
    tol = doc["tolerance"]
    print(f"{doc['problem']} (version {doc['version']}): {len(doc['tests'])} sample tests, "
          f"atol {tol['atol']:g}, rtol {tol['rtol']:g}")
    try:
        entry = load_function(solution, doc["entry_point"])
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - the import failing is the learner's to read
        print("Compile error: importing the solution failed\n" + traceback.format_exc())
        return 1
    passed = 0
    for test in doc["tests"]:
        kwargs = {k: _decode(v, npz) for k, v in test["inputs"].items()}
        want = _decode(test["expected"], npz)
        start = time.perf_counter()
        try:
            out = entry(**kwargs)
        except Exception:  # noqa: BLE001 - reported as the judge would: a runtime error
            print(f"{test['name']}: Runtime error\n{traceback.format_exc()}")
            continue
        ms = (time.perf_counter() - start) * 1000
        got, why = as_float64(out, int(want.size))
        if got is None:
            print(f"{test['name']}: Wrong answer: {why}")
            continue
        ok, figures = check(got, want, test["shape"], tol["atol"], tol["rtol"])
        print(f"{test['name']}: {'Accepted' if ok else 'Wrong answer'}: {figures} ({ms:.1f} ms)")
        passed += ok
    total = len(doc["tests"])
    print(f"{passed}/{total} sample tests passed"
          + ("" if passed == total else "; fix the failing ones before you submit"))
    return 0 if passed == total else 1


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    return run(argv[1], argv[2] if len(argv) == 3 else DEFAULT_SAMPLES)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
