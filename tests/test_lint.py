"""The code keeps to the project's own lint and type settings (pyproject.toml)."""

from __future__ import annotations

import ast
import subprocess
import sys
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


def test_no_two_modules_import_each_other_in_a_circle() -> None:
    files = {}
    for package in ("app", "judge"):
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {m: _imports(m, p, set(files)) for m, p in files.items()}
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
