"""Starters per framework (issue 27): every bundled problem offers a starter for each framework
it allows, each raising NotImplementedError with a sentence so the first Run says what to do;
the service hands them out in the problem's framework order; difficulties tell the problems
apart."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from app.services import problems, starters
from app.settings import REPO_ROOT
from judge.package import PackageError, load_package
from tests.app.tj_testlib import DOUBLE

BUNDLED = sorted(p for p in (REPO_ROOT / "problems").iterdir() if (p / "problem.toml").is_file())


def raises_not_implemented_with_words(source: str, entry: str) -> bool:
    fn = next(n for n in ast.parse(source).body
              if isinstance(n, ast.FunctionDef) and n.name == entry)
    last = fn.body[-1]
    return (isinstance(last, ast.Raise) and isinstance(last.exc, ast.Call)
            and isinstance(last.exc.func, ast.Name) and last.exc.func.id == "NotImplementedError"
            and len(last.exc.args) == 1 and isinstance(last.exc.args[0], ast.Constant)
            and isinstance(last.exc.args[0].value, str) and len(last.exc.args[0].value) > 10)


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_a_starter_per_framework_that_says_what_to_do(path: Path):
    package = load_package(path, check_generator=False)
    frameworks = list(package.manifest.frameworks)
    offered = {frameworks[0]: package.starter, **package.starters}
    assert set(offered) == set(frameworks)
    for fw, source in offered.items():
        assert source is not None, fw
        assert raises_not_implemented_with_words(source, package.entry_point), (path.name, fw)
        if fw in ("jax", "torch", "flax"):
            assert f"import {fw}" in source or f"from {fw}" in source, (path.name, fw)


def test_difficulties_tell_the_problems_apart():
    levels = {load_package(p, check_generator=False).manifest.difficulty for p in BUNDLED}
    assert len(levels) >= 3


def test_a_starter_for_a_framework_the_problem_does_not_allow_is_a_defect(tmp_path):
    pkg = tmp_path / "double"
    shutil.copytree(DOUBLE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "starters").mkdir()
    (pkg / "starters" / "torch.py").write_text("def double(x):\n    raise NotImplementedError\n")
    with pytest.raises(PackageError) as e:
        load_package(pkg, check_generator=False)
    assert any(d.file == "starters/torch.py" for d in e.value.defects)
    (pkg / "starters" / "torch.py").unlink()
    (pkg / "starters" / "numpy.py").write_text("def halve(x):\n    return x\n")
    with pytest.raises(PackageError) as e:
        load_package(pkg, check_generator=False)
    assert any(d.file == "starters/numpy.py" and d.field == "entry_point"
               for d in e.value.defects)


def test_the_service_lists_them_in_framework_order(ctx):
    problems.store(ctx, REPO_ROOT / "problems" / "encoder-decoder", mode="ensure",
                   validator=None)
    by_framework = starters.starters_of(ctx, "encoder-decoder")
    assert list(by_framework) == ["numpy", "jax", "torch"]
    assert "import torch" in by_framework["torch"]
    assert starters.starters_of(ctx, "double") == {}  # no starter.py: the page makes one
