"""The code keeps to the project's own lint and type settings (pyproject.toml)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    res = _run("ruff", "check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_app_and_the_engine_type_check(tmp_path) -> None:
    res = _run("mypy", "--cache-dir", str(tmp_path), "app", "judge")
    assert res.returncode == 0, res.stdout + res.stderr


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `module` imports anywhere in its file (lazy imports included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from package import submodule` imports the submodule; other names, the module.
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known
                     else node.module for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return out


def _project_modules() -> dict[str, Path]:
    """Every module of app/ and judge/ by its dotted name, with its file."""
    files = {}
    for package in ("app", "judge"):
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _import_graph() -> dict[str, set[str]]:
    files = _project_modules()
    return {m: _imports(m, p, set(files)) for m, p in files.items()}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _crossings(graph: dict[str, set[str]], source: str,
               allowed: Callable[[str], bool]) -> list[str]:
    """`a -> b` for each module `a` of the package `source` that imports a judge module `b`
    that `allowed` refuses."""
    return sorted(f"{m} -> {i}" for m, imported in graph.items() if _within(m, source)
                  for i in imported if _within(i, "judge") and not allowed(i))


# The judge's face (judge/__init__.py) and, for types, its package models.
APP_MAY_IMPORT = ("judge", "judge.package")


def test_the_app_reaches_the_judge_only_through_its_face() -> None:
    crossings = _crossings(_import_graph(), "app", lambda m: m in APP_MAY_IMPORT)
    assert not crossings, "import these through `judge` instead:\n" + "\n".join(crossings)


# The trust boundary (judge/inside, judge/portable, judge/trusted): tests/judge/
# test_trust_boundary.py.


def test_importing_the_judge_s_face_loads_nothing_of_it() -> None:
    """`import judge` stays cheap (the command line, the pages): each name loads on first use."""
    res = subprocess.run(
        [sys.executable, "-c", "import sys, judge; print(sorted(m for m in sys.modules "
         "if m.startswith(('judge.', 'numpy', 'pydantic'))))"],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


def test_every_name_of_the_face_resolves_and_none_is_a_module_of_the_judge() -> None:
    """A name that is also a submodule (`judge.validate`) would be replaced by the module
    as soon as anything imported it."""
    import judge

    submodules = {m.split(".")[1] for m in _project_modules() if m.startswith("judge.")}
    assert not submodules & set(judge.__all__)
    for name in judge.__all__:
        assert getattr(judge, name) is not None, name
    assert set(judge.__all__) == set(judge._FACE)


def test_no_two_modules_import_each_other_in_a_circle() -> None:
    graph = _import_graph()
    circles = []
    for start in graph:  # a path from each module back to itself, by depth-first search
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert not circles, "\n".join(sorted(set(circles)))
    assert not any(m.startswith("app") for m in set().union(*(graph[m] for m in graph
                                                              if m.startswith("judge"))))


# A module past this is doing more than one thing: split it (the judge's sandbox pool is
# the judge's to split).
MAX_APP_MODULE_LINES = 450


def test_the_app_s_modules_stay_small() -> None:
    long = sorted(f"{p.relative_to(REPO)}: {n} lines" for p in (REPO / "app").rglob("*.py")
                  if (n := len(p.read_text(encoding="utf-8").splitlines()))
                  > MAX_APP_MODULE_LINES)
    assert not long, "split these:\n" + "\n".join(long)
