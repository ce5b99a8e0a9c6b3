"""The trust boundary holds in the code: what runs inside the sandbox (judge/inside) imports
nothing of the host, what runs on both sides (judge/portable) nothing but the standard library,
and the trusted host code (judge/trusted) never imports the in-sandbox code. The runner's
parts, run as one source in the sandbox, each come after the parts they use and define no
name twice."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge.sandbox import sources
from tests.conftest import REPO

JUDGE = REPO / "judge"
# The libraries the sandbox itself imports (its site-packages are the judge's).
SANDBOX_LIBRARIES = {"numpy", "jax", "pyseccomp"}


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """Each module `path` imports anywhere (lazy imports included), with its line."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: a relative import"
            assert node.module is not None
            for alias in node.names:  # `from judge import inside` imports judge.inside
                yield f"{node.module}.{alias.name}", node.lineno


def _top(name: str) -> str:
    return name.partition(".")[0]


def _files(folder: str) -> list[Path]:
    files = sorted((JUDGE / folder).glob("*.py"))
    assert files
    return files


@pytest.mark.parametrize("path", _files("inside"), ids=lambda p: p.name)
def test_in_sandbox_code_imports_nothing_of_the_host(path: Path) -> None:
    for name, line in _imports(path):
        if _top(name) == "judge":
            assert name.startswith(("judge.inside.", "judge.portable.")), f"{path.name}:{line}"
        else:
            assert (_top(name) in sys.stdlib_module_names
                    or _top(name) in SANDBOX_LIBRARIES), f"{path.name}:{line}: {name}"


@pytest.mark.parametrize("path", _files("portable"), ids=lambda p: p.name)
def test_portable_code_imports_only_the_standard_library(path: Path) -> None:
    for name, line in _imports(path):
        assert _top(name) in sys.stdlib_module_names, f"{path.name}:{line}: {name}"


@pytest.mark.parametrize("path", _files("trusted"), ids=lambda p: p.name)
def test_trusted_code_never_imports_in_sandbox_code(path: Path) -> None:
    for name, line in _imports(path):
        assert not (name + ".").startswith("judge.inside."), f"{path.name}:{line}: {name}"


def _module(part: str) -> str:
    return "judge." + part.removesuffix(".py").replace("/", ".")


def test_the_runners_parts_come_after_what_they_use_and_share_no_name() -> None:
    order = [_module(part) for part in sources.RUNNER_PARTS]
    defined: dict[str, str] = {}
    for i, part in enumerate(sources.RUNNER_PARTS):
        path = JUDGE / part
        for name, line in _imports(path):
            if name.startswith("judge."):
                module = name.rpartition(".")[0]
                assert module in order[:i], f"{part}:{line}: {module} does not come before it"
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            else:
                continue
            for name in names:
                # One namespace in the sandbox: a second definition would replace the first.
                assert name not in defined, f"{name}: in {defined[name]} and {part}"
                defined[name] = part
    assert order[-1] == "judge.inside.runner"
    # Every in-sandbox module the runner's parts import is one of them.
    inside = {_module(str(p.relative_to(JUDGE))) for p in _files("inside")}
    assert inside - set(order) == {"judge.inside.zygote", "judge.inside.container_init",
                                   "judge.inside.__init__"}
