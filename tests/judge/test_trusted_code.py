"""The trusted outputs' keys hold a hash of the judge's code that computes and stores them
(judge/trusted/code.py): an output stored by another version of that code is never read, so
the suite may start from the developer's cache (tests/conftest.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from judge.cache_links import link_outputs
from judge.package import load_package
from judge.trusted import expected
from judge.trusted.code import ROOT, TRUSTED_CODE, code_hash, trusted_files
from tests.conftest import FIXTURES

# The trusted process as judge.trusted.expected runs it, on the `double` fixture: the reference,
# and a known mistake in float16 (the imports of its narrowing), then the judge's modules it
# loaded.
PROBE = """
import io, json, sys
from judge.trusted import reference_run
sys.stdin = io.StringIO(sys.argv[1])
reference_run.main()
print(json.dumps(sorted(m.__file__ for n, m in list(sys.modules.items())
                        if n.split(".")[0] == "judge" and getattr(m, "__file__", None))))
"""


def test_the_hash_covers_every_judge_module_the_trusted_process_loads(tmp_path: Path) -> None:
    package = load_package(FIXTURES / "double")
    items = [{"name": t.name, "key": f"ref{i}"} for i, t in enumerate(package.tests)]
    items.append({"name": package.tests[0].name, "key": "mistake", "precision": "float16",
                  "module": "submissions/wrong_answer/add_one.py"})
    request = {"package": str(package.path), "tests": items, "float64": False,
               "out_dir": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(request)], cwd=ROOT,
                         env=expected.trusted_env(), capture_output=True, text=True,
                         check=True).stdout
    assert (tmp_path / "mistake.npy").is_file()  # it ran what it was asked
    loaded = {Path(f).resolve() for f in json.loads(out.splitlines()[-1])}
    covered = {f.resolve() for f in trusted_files()}
    assert {ROOT / "judge/trusted/reference_run.py", ROOT / "judge/package/loading.py"} <= loaded
    assert loaded <= covered, sorted(str(f.relative_to(ROOT)) for f in loaded - covered)


def _copy(root: Path) -> Path:
    for name in TRUSTED_CODE:
        source, target = ROOT / name, root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target)
    return root


@pytest.mark.parametrize("edit", ["judge/trusted/reference_run.py",
                                  "judge/portable/flax_variables.py",
                                  "judge/package/loading.py"])
def test_an_edit_of_the_trusted_code_changes_the_hash(tmp_path: Path, edit: str) -> None:
    root = _copy(tmp_path)
    assert code_hash(root) == code_hash()
    with (root / edit).open("a") as f:
        f.write("# an edit\n")
    assert code_hash(root) != code_hash()


def test_another_hash_of_the_trusted_code_means_other_keys(
        monkeypatch: pytest.MonkeyPatch) -> None:
    package = load_package(FIXTURES / "double")
    test = package.tests[0]
    mine = expected.test_key(package, test)
    monkeypatch.setattr(expected, "code_hash", lambda: "0" * 64)
    assert expected.test_key(package, test) != mine


def test_outputs_of_another_version_of_the_trusted_code_are_computed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's cache from before an edit of the trusted code, seeded as the suite seeds
    its own: the outputs are computed again, not read, and the developer's files are left as
    they were."""
    developer = tmp_path / "developer" / "expected"
    package = load_package(FIXTURES / "double")
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(developer.parent))
    monkeypatch.setattr(expected, "code_hash", lambda: "0" * 64)  # the code before the edit
    before = expected.expected_outputs(package, package.tests)
    _recognisable(developer)
    monkeypatch.undo()
    private = tmp_path / "private"
    assert link_outputs(developer, private / "expected") >= len(package.tests)
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(private))
    after = expected.expected_outputs(package, package.tests)
    assert not any((a == 1234.0).any() for a in after)
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    _unchanged(developer)


def test_an_output_the_suite_computes_again_leaves_the_developers_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded files are links: a file written again over one replaces the link, never writes
    through it. Here a trusted process was stopped between its two writes of each output
    (the variables, then the numbers): the numbers are computed, the variables written again."""
    developer = tmp_path / "developer" / "expected"
    package = load_package(FIXTURES / "double")
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(developer.parent))
    expected.expected_outputs(package, package.tests)
    variables = sorted(developer.glob("*.variables.json"))
    assert len(variables) == len(package.tests)
    for f in variables:
        f.write_text('"the developer\'s"')
    for f in developer.glob("*.npy"):
        f.unlink()
    private = tmp_path / "private"
    link_outputs(developer, private / "expected")
    monkeypatch.setenv("TENSORJUDGE_CACHE_DIR", str(private))
    expected.expected_outputs(package, package.tests)
    assert all((private / "expected" / f.name).read_text() != f.read_text() for f in variables)
    assert all(f.read_text() == '"the developer\'s"' for f in variables)


def _recognisable(folder: Path) -> None:
    """The outputs in `folder` overwritten with a value no reference of `double` gives."""
    outputs = list(folder.glob("*.npy"))
    assert outputs
    for out in outputs:
        np.save(out, np.full(1, 1234.0))


def _unchanged(folder: Path) -> None:
    assert all((np.load(f) == 1234.0).all() for f in folder.glob("*.npy"))


def test_linking_outputs_takes_only_outputs_and_keeps_what_is_there(tmp_path: Path) -> None:
    """An image's cache starts from the set-up's this way too (deploy/trusted_outputs.py)."""
    source, target = tmp_path / "source", tmp_path / "target"
    source.mkdir()
    for name in ("a.npy", "b.failed", "c.variables.json", "d.lock", "e.py"):
        (source / name).write_text(name)
    target.mkdir()
    (target / "a.npy").write_text("computed here")
    assert link_outputs(source, target) == 2
    assert sorted(p.name for p in target.iterdir()) == ["a.npy", "b.failed", "c.variables.json"]
    assert (target / "a.npy").read_text() == "computed here"
    assert link_outputs(target, target) == 0
    assert link_outputs(tmp_path / "none", target) == 0
