"""The samples to take home (issue 27): the .npz and JSON downloads hold every sample test
whole and no hidden one, and the checker, run with nothing but NumPy importable, passes an
accepted solution and fails a packaged wrong answer naming the test, with the judge's own
comparison rules."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.context import Context
from app.db import migrate
from app.main import create_app
from app.services import problems
from app.services.sample_checker import check
from app.settings import REPO_ROOT
from judge.compare import compare
from judge.package import Tolerance
from tests.app.tj_testlib import DOUBLE, make_settings

PACKAGE = REPO_ROOT / "problems" / "decoder-block"
ACCEPTED = PACKAGE / "submissions" / "accepted" / "numpy_einsum.py"
WRONG = PACKAGE / "submissions" / "wrong_answer" / "no_causal_mask.py"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One SQLite service with the `double` fixture and a bundled NumPy problem."""
    root = tmp_path_factory.mktemp("downloads")
    dirs = {"data": root / "data", "cache": root / "cache"}
    ctx = Context.create(make_settings(f"sqlite:///{root / 'tj.db'}", dirs))
    migrate.upgrade(ctx.db)
    problems.store(ctx, DOUBLE, mode="ensure", validator=None)
    problems.store(ctx, PACKAGE, mode="ensure", validator=None)
    with TestClient(create_app(ctx.settings, ctx=ctx)) as c:
        yield c
    ctx.close()


def download(client: TestClient, slug: str, dest: Path) -> dict[str, Path]:
    out = {}
    for name in ("samples.npz", "samples.json", "checker.py"):
        r = client.get(f"/api/v1/problems/{slug}/{name}")
        assert r.status_code == 200, r.text
        assert r.headers["content-disposition"].startswith("attachment; filename=")
        path = dest / ("check.py" if name == "checker.py" else f"{slug}-{name}")
        path.write_bytes(r.content)
        out[name] = path
    return out


def numpy_only(folder: Path) -> None:
    """Link NumPy (and its bundled libraries) into `folder`: with `python -I -S` and that
    folder put first, it and the standard library are all there is on sys.path."""
    site = Path(np.__file__).resolve().parents[1]
    for entry in site.iterdir():
        if entry.name == "numpy" or entry.name == "numpy.libs":
            (folder / entry.name).symlink_to(entry)


# `-I` leaves even the script's folder off sys.path: this puts the folder there, then runs the
# checker as `python check.py ARGS` would.
BOOT = ("import sys, runpy; sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[2:]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')")


def run_isolated(folder: Path, script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", BOOT, str(folder), str(script), *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def run_checker(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_isolated(folder, folder / "check.py", *args)


def test_round_trip_with_numpy_only(client, tmp_path):
    files = download(client, "decoder-block", tmp_path)
    numpy_only(tmp_path)
    for name, source in (("accepted.py", ACCEPTED), ("wrong.py", WRONG)):
        (tmp_path / name).write_bytes(source.read_bytes())

    # Nothing of the judge, the service or another framework can be imported there.
    probe = run_checker(tmp_path, "--help")
    assert probe.returncode == 2 and "python check.py" in probe.stdout, probe.stderr
    (tmp_path / "imports.py").write_text(
        "import sys\nimport numpy\nprint(sys.path)\n"
        "for m in ('judge', 'app', 'jax', 'torch', 'flax', 'pytest'):\n"
        "    try:\n        __import__(m)\n    except ImportError:\n        pass\n"
        "    else:\n        print('importable', m)\n")
    isolated = run_isolated(tmp_path, tmp_path / "imports.py")
    assert isolated.returncode == 0 and "importable" not in isolated.stdout, isolated

    ok = run_checker(tmp_path, "accepted.py")  # the default samples file: the .npz
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "3/3 sample tests passed" in ok.stdout
    assert ok.stdout.count(": Accepted: ") == 3

    bad = run_checker(tmp_path, "wrong.py", files["samples.json"].name)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    failed = [line for line in bad.stdout.splitlines() if ": Wrong answer: " in line]
    assert failed and all(line.startswith("sample-") for line in failed)
    assert "values differ; worst at [" in failed[0]
    assert "sample tests passed; fix the failing ones" in bad.stdout


def test_both_downloads_hold_the_same_samples_whole(client):
    npz = np.load(io.BytesIO(client.get("/api/v1/problems/decoder-block/samples.npz").content),
                  allow_pickle=False)
    doc = json.loads(str(npz["__samples__"]))
    as_json = client.get("/api/v1/problems/decoder-block/samples.json").json()
    assert doc["format"] == as_json["format"] == "tensorjudge-samples/1"
    assert doc["tolerance"] == as_json["tolerance"] == {"atol": 1e-4, "rtol": 1e-4}
    assert [t["name"] for t in doc["tests"]] == ["sample-1", "sample-2", "sample-3"]
    for t_npz, t_json in zip(doc["tests"], as_json["tests"], strict=True):
        tgt = npz[t_npz["inputs"]["tgt"]["npz"]]
        tgt_json = t_json["inputs"]["tgt"]["array"]
        assert str(tgt.dtype) == tgt_json["dtype"] == "float32"
        assert list(tgt.shape) == tgt_json["shape"]
        # Whole and exact: every value, to the bit.
        np.testing.assert_array_equal(
            tgt, np.array(tgt_json["data"], dtype=np.float32).reshape(tgt.shape))
        expected = npz[t_npz["expected"]["npz"]]
        assert expected.size == int(np.prod(t_npz["shape"]))
        params = t_json["inputs"]["params"]["dict"]
        assert set(params) >= {"sa_wq", "ff_w1", "ln3_b"}


def test_hidden_tests_never_leave_the_server(client):
    hidden = [n for n in problems.test_names(client.app.state.ctx, "double")
              if not n.startswith("sample")]
    assert hidden
    for name in ("samples.npz", "samples.json"):
        body = client.get(f"/api/v1/problems/double/{name}").content
        for n in hidden:
            assert n.encode() not in body, (name, n)


def test_the_checker_compares_as_the_judge_does():
    rng = np.random.default_rng(0)
    tol = Tolerance(atol=1e-4, rtol=1e-3)
    shape = (3, 4)
    want = rng.normal(size=12)
    bound = tol.atol + tol.rtol * np.abs(want)
    cases = {
        "equal": want.copy(),
        "at the bound": want + bound,
        "just past the bound": want + bound * (1 + 1e-6),
        "one NaN": np.where(np.arange(12) == 5, np.nan, want),
        "NaN where want is NaN": want,  # want gets a NaN below
        "an infinity": np.where(np.arange(12) == 7, np.inf, want),
        "scaled": want * 1.5,
    }
    for label, got in cases.items():
        w = want.copy()
        if label == "NaN where want is NaN":
            w[2] = np.nan
            got = w.copy()
        judged = compare("t", got, w, shape, tol, None)
        passed, figures = check(got, w, list(shape), tol.atol, tol.rtol)
        assert passed == (judged.verdict.value == "AC"), label
        if not passed:
            assert judged.message is not None and judged.message.startswith(figures), label
