"""Parsing Python source from several threads at once."""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from typing import TypeVar

# CPython 3.11 (3.11.7 among others) keeps the AST converter's recursion depth in state shared
# by the whole interpreter. When two threads parse at once and a garbage collection switches
# threads mid-conversion, one of them fails with "SystemError: AST constructor recursion depth
# mismatch". Judges run in threads (validation, the worker's slots), so every parse goes
# through this lock; a parse takes milliseconds. Parses outside the judge's code cannot take
# it (3.11's traceback module parses source lines to place its carets), so a parse that
# meets one of those is tried again: the shared depth is whole again once both are done.
_LOCK = threading.RLock()  # re-entrant: a finalizer that parses must not deadlock
_ATTEMPTS = 5
T = TypeVar("T")


def retried_after_parse_race(work: Callable[[], T], attempts: int = _ATTEMPTS) -> T:
    """`work()`, tried again when a parse in it met an unlocked one (see above)."""
    for attempt in range(attempts):
        try:
            return work()
        except SystemError as e:
            if "recursion depth mismatch" not in str(e) or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _LOCK:
        return retried_after_parse_race(lambda: ast.parse(source, filename=filename))


def parse_expression(source: str) -> ast.expr:
    """One expression, parsed as `parse` parses a file."""
    with _LOCK:
        return retried_after_parse_race(lambda: ast.parse(source, mode="eval").body)
