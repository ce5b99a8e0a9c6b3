"""Problem packages: good ones load, broken ones are refused with every defect listed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judge.package import PackageError, discover, load_package
from judge.verdicts import Verdict
from tests.conftest import FIXTURES, REPO


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "double"
    shutil.copytree(FIXTURES / "double", dst)
    return dst


def test_fixture_package_loads():
    p = load_package(FIXTURES / "double")
    assert p.slug == "double"
    assert [t.name for t in p.samples] == ["sample-1"]
    assert {s.expected for s in p.submissions()} == {Verdict.AC, Verdict.WA}


def test_bundled_packages_load():
    slugs = [load_package(p).slug for p in discover(REPO / "problems")]
    assert slugs == sorted(["encoder-block", "decoder-block-preln", "decoder-block",
                            "encoder-decoder"])


def test_broken_package_lists_every_defect(tmp_path):
    pkg = _copy(tmp_path)
    toml = (pkg / "problem.toml").read_text()
    toml = toml.replace('difficulty = "easy"', 'difficulty = "trivial"')
    toml = toml.replace('entry_point = "double"', 'entry_point = "not an identifier"')
    toml = toml.replace("atol = 1e-6", "atol = -1")
    toml = toml.replace('name = "hidden-2"', 'name = "hidden-1"')
    (pkg / "problem.toml").write_text('surprise = "field"\n' + toml)
    (pkg / "statement.md").unlink()
    with pytest.raises(PackageError) as err:
        load_package(pkg)
    found = {(d.file, d.field) for d in err.value.defects}
    assert ("problem.toml", "difficulty") in found
    assert ("problem.toml", "entry_point") in found
    assert ("problem.toml", "tolerance.atol") in found
    assert ("problem.toml", "surprise") in found
    assert ("statement.md", "") in found
    text = str(err.value)
    assert "problem.toml: difficulty" in text and "statement.md: missing" in text


def test_second_pass_defects_are_listed_together(tmp_path):
    pkg = _copy(tmp_path)
    toml = (pkg / "problem.toml").read_text().replace('name = "hidden-2"', 'name = "hidden-1"')
    toml = toml.replace('reference = "reference.py"', 'reference = "nowhere.py"')
    (pkg / "problem.toml").write_text(toml.replace('slug = "double"', 'slug = "twice"'))
    (pkg / "starter.py").write_text("def double(x:\n")
    with pytest.raises(PackageError) as err:
        load_package(pkg)
    whys = [str(d) for d in err.value.defects]
    assert any("slug" in w and "folder" in w for w in whys)
    assert any("reference" in w and "nowhere.py" in w for w in whys)
    assert any("used twice" in w for w in whys)
    assert any(w.startswith("starter.py") for w in whys)


def test_broken_generator_is_a_defect(tmp_path):
    pkg = _copy(tmp_path)
    (pkg / "generator.py").write_text(
        "import numpy as np, random\n"
        "def generate(seed, n, m):\n"
        "    return {'x': np.full((n, m), random.random(), dtype=np.float32), 'f': print}\n"
        "def output_shape(args):\n    return args['x'].shape\n"
    )
    with pytest.raises(PackageError) as err:
        load_package(pkg)
    assert all(d.file == "generator.py" for d in err.value.defects)
    assert any("cannot be sent" in d.why for d in err.value.defects)


def test_nondeterministic_generator_is_a_defect(tmp_path):
    pkg = _copy(tmp_path)
    (pkg / "generator.py").write_text(
        "import numpy as np\n"
        "def generate(seed, n, m):\n"
        "    return {'x': np.random.default_rng().standard_normal((n, m)).astype(np.float32)}\n"
        "def output_shape(args):\n    return args['x'].shape\n"
    )
    with pytest.raises(PackageError) as err:
        load_package(pkg)
    assert any(d.why == "not deterministic" for d in err.value.defects)


def test_not_a_package(tmp_path):
    with pytest.raises(PackageError) as err:
        load_package(tmp_path)
    files = {d.file for d in err.value.defects}
    assert {"problem.toml", "statement.md", "generator.py"} <= files
