"""What a runtime error most likely means, read from where it happens as well as from what
it says.

An error that occurs only on tests where two sizes differ, quoting both among its shapes,
while the tests where they are equal (or one of them is 1, which array libraries stretch to
fit) run, says that one size is used where the other belongs: the classic case is
cross-attention with queries and keys/values swapped, which runs when both sequences have
the same length. A package names the pairs it knows (`size_mixups` in problem.toml) with its
own words; another pair that fits alone gets a plain finding; several that fit get none (a
wrong name is worse than none).
"""

from __future__ import annotations

import re
from itertools import combinations

from judge.diagnosis.case import Case
from judge.verdicts import Finding, Verdict

# A raised exception's line ("ValueError: ...", "torch.OutOfMemoryError: ..."), as opposed to
# a crash or a limit.
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")
_TUPLE = re.compile(r"\((\d+(?:\s*,\s*\d+)*)\s*,?\s*\)|\b(\d+)x(\d+)\b")


def size_mixups(case: Case) -> list[Finding]:
    tests = case.result.tests
    ran = [i for i, t in enumerate(tests) if t.verdict is not None]
    errors = [i for i in ran if tests[i].verdict is Verdict.RE
              and _EXCEPTION.match(tests[i].message or "")]
    if not errors or len(errors) == len(ran):
        return []  # no error, or nothing that runs to contrast it with
    sizes = _sizes(case)
    failing = set(errors)
    messages = {i: tests[i].message or "" for i in errors}
    fits = [(a, b) for a, b in combinations(sorted(sizes), 2)
            if _fits(sizes[a], sizes[b], ran, failing, messages)]
    if not fits:
        return []
    names = [case.tests[i].name for i in errors]
    shapes = _named_shapes(tests[errors[0]].message or "", {k: v[errors[0]]
                                                            for k, v in sizes.items()})
    note = f" In test {names[0]}, the error's shapes read {shapes}." if shapes else ""
    declared = {frozenset(m.sizes): m for m in case.package.manifest.size_mixups}
    known = [declared[frozenset(p)] for p in fits if frozenset(p) in declared]
    if len(known) == 1:
        return [Finding("error", known[0].title, known[0].detail + note, names)]
    if len(fits) == 1:
        a, b = fits[0]
        return [Finding(
            "error", f"An error exactly where {a} and {b} differ",
            f"The code fails on the tests where {a} != {b} (the error quotes both) and runs "
            f"on those where they are equal or one is 1, so somewhere a size of {a} is used "
            f"where {b} belongs, or the reverse (an input, a mask, a reshape or a weight "
            "taken for the other)." + note, names)]
    return []


def _fits(a: list[int], b: list[int], ran: list[int], failing: set[int],
          messages: dict[int, str]) -> bool:
    """Whether sizes a and b being mixed up explains where the code fails: never where they
    are equal, everywhere they differ except where one is 1 (array libraries stretch a size
    of 1 to fit, so such a test may run despite the mix-up), some test runs, and an error
    quotes both sizes among its shapes."""
    if any(a[i] == b[i] for i in failing):
        return False
    running = [i for i in ran if i not in failing]
    if not running or any(a[i] != b[i] and 1 not in (a[i], b[i]) for i in running):
        return False
    return any({a[i], b[i]} <= _quoted_dims(messages[i]) for i in failing)


def _quoted_dims(message: str) -> set[int]:
    dims: set[int] = set()
    for m in _TUPLE.finditer(message[:2000]):
        if m.group(1):
            dims.update(int(x) for x in m.group(1).split(","))
        else:
            dims.update((int(m.group(2)), int(m.group(3))))
    return dims


def _sizes(case: Case) -> dict[str, list[int]]:
    """The integer parameters every test has, by name, one value per test."""
    out: dict[str, list[int]] = {}
    if not case.tests:
        return out
    for name in case.tests[0].params:
        values = [t.params.get(name) for t in case.tests]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            out[name] = [int(v) for v in values]  # type: ignore[arg-type]
    return out


def _named_shapes(message: str, sizes: dict[str, int]) -> str:
    """The shapes an error message quotes, each number named where exactly one size has
    that value ("(B, 1, 1, T_src) and (B, H, T_tgt, 3)"); "" when none can be named."""
    by_value: dict[int, list[str]] = {}
    for name, v in sizes.items():
        by_value.setdefault(v, []).append(name)
    found: list[str] = []
    named = False
    for m in _TUPLE.finditer(message[:2000]):
        dims = [int(x) for x in m.group(1).split(",")] if m.group(1) else \
            [int(m.group(2)), int(m.group(3))]
        parts = []
        for d in dims:
            names = by_value.get(d, [])
            if len(names) == 1 and d > 1:
                parts.append(names[0])
                named = True
            else:
                parts.append(str(d))
        found.append("(" + ", ".join(parts) + ")")
        if len(found) == 4:
            break
    return " and ".join(found) if named else ""
