import ast
import gc
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from judge import pysource

SOURCES = [p.read_text() for p in sorted(Path("reference_solutions").glob("*.py"))]


class _Cycle:
    """Garbage whose finalizer yields the GIL, as any finalizer running Python code may."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


def test_parses_from_several_threads_at_once():
    # On CPython 3.11.7 plain ast.parse fails here within a few hundred parses: a collection
    # inside one thread's parse runs a finalizer, another thread parses meanwhile, and the
    # first finds its recursion depth changed under it.
    errors: list[BaseException] = []

    def work() -> None:
        for i in range(100):
            for _ in range(20):
                _Cycle()
            try:
                tree = pysource.parse(SOURCES[i % len(SOURCES)])
                assert isinstance(tree, ast.Module)
            except BaseException as e:  # noqa: BLE001 - collected for the assertion below
                errors.append(e)

    old = gc.get_threshold()
    gc.set_threshold(100, 1, 1)
    try:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*old)
    assert SOURCES and not errors


def test_syntax_errors_pass_through():
    try:
        pysource.parse("def f(:\n", filename="solution.py")
    except SyntaxError as e:
        assert e.filename == "solution.py" and e.lineno == 1
    else:
        raise AssertionError("no SyntaxError")


def test_a_parse_that_met_an_unlocked_one_is_tried_again(monkeypatch):
    real = ast.parse
    calls = []

    def racing(source, *args, **kwargs):
        calls.append(source)
        if len(calls) == 1:  # what a traceback's own parse in another thread causes
            raise SystemError("AST constructor recursion depth mismatch (before=30, after=46)")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pysource, "ast", SimpleNamespace(parse=racing))
    assert isinstance(pysource.parse("x = 1\n"), ast.Module)
    assert len(calls) == 2


def test_other_system_errors_are_not_hidden(monkeypatch):
    def broken(source, *args, **kwargs):
        raise SystemError("something else")

    monkeypatch.setattr(pysource, "ast", SimpleNamespace(parse=broken))
    with pytest.raises(SystemError, match="something else"):
        pysource.parse("x = 1\n")


def test_preparing_tests_is_tried_again_after_a_parse_race(monkeypatch, double):
    from judge import prepared

    real = prepared._prepare
    calls = []

    def racing(package, samples_only, *args):
        calls.append(1)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=51, after=48)")
        return real(package, samples_only, *args)

    monkeypatch.setattr(prepared, "_prepare", racing)
    monkeypatch.setattr(prepared, "_PREPARED", type(prepared._PREPARED)())
    assert prepared.prepare(double, True).tests
    assert len(calls) == 2


def test_the_host_parses_only_through_the_lock():
    """A parse outside the lock races the locked ones (a submission's POST failed with a 500
    while the worker threads parsed): every host module parses through pysource. The code
    that runs inside the sandbox is a process of its own, and the tests are not the judge."""
    root = Path(__file__).resolve().parents[2]
    unlocked = []
    for path in sorted([*root.glob("judge/**/*.py"), *root.glob("app/**/*.py")]):
        if path.name == "pysource.py" or "inside" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "parse" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "ast"):
                unlocked.append(f"{path.relative_to(root)}:{node.lineno}")
    assert unlocked == []


def test_an_expression_parses_through_the_lock():
    node = pysource.parse_expression("a + 1")
    assert isinstance(node, ast.BinOp)
