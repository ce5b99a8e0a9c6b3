"""Parameter trees of Flax submissions: where a submission's variables differ from the
reference's, and why that changes its output.

The sandbox reports the paths and shapes of the variables the submission's first
`Module.init` of a test returned (`InitRecorder` in judge/portable/flax_variables.py); the trusted
reference run records the reference's the same way, cached beside its outputs. Flax draws each
parameter from a key derived from its path, so a submodule with another name gets other
weights from the same seed even when the computation is right; auto-names come from the class
and the order in which submodules are created. The report is the submission's own data: it
can only mislead about itself, and it is parsed with hard bounds.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

from judge.diagnosis.case import Case
from judge.diagnosis.structure import Tree, gaps
from judge.package import Package, TestSpec
from judge.trusted.expected import cache_dir, run_trusted, test_key
from judge.verdicts import Finding

MAX_ENTRIES, MAX_PATH, MAX_RANK = 256, 400, 8

WHY = ("Flax draws each parameter from a random key derived from its path (the submodule "
       "names included), so the same seed gives other weights under other paths, even when "
       "the computation itself is right.")


def parse_variables(raw: object) -> Tree | None:
    """The sandbox's report as a tree, or None when it is absent or not what it should be."""
    if not isinstance(raw, list) or len(raw) > MAX_ENTRIES:
        return None
    out: Tree = []
    for entry in raw:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
                and 0 < len(entry[0]) <= MAX_PATH and isinstance(entry[1], list)
                and len(entry[1]) <= MAX_RANK
                and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**31
                        for d in entry[1])):
            return None
        out.append((entry[0], tuple(entry[1])))
    return out


def reference_variables(package: Package, tests: list[TestSpec]) -> list[Tree | None]:
    """The reference's tree on each test (computed with its outputs, by content hash)."""
    key = (package.content_hash, tuple(t.name for t in tests))
    with _LOCK:
        if key in _TREES:
            return _TREES[key]
    d = cache_dir()
    keys = [test_key(package, t) for t in tests]
    todo = [{"name": t.name, "key": k} for t, k in zip(tests, keys, strict=True)
            if not (d / f"{k}.variables.json").is_file()]
    if todo:
        run_trusted(package, todo, False, d)
    trees = [parse_variables(json.loads((d / f"{k}.variables.json").read_text()))
             for k in keys]
    with _LOCK:
        _TREES[key] = trees
        while len(_TREES) > 16:
            _TREES.popitem(last=False)
    return trees


_TREES: OrderedDict[tuple[str, tuple[str, ...]], list[Tree | None]] = OrderedDict()
_LOCK = threading.Lock()


def parameters(case: Case) -> list[Finding]:
    """How the first failed test's variables differ from the reference's, if they do."""
    if "flax" not in case.package.manifest.frameworks:
        return []
    failed = [i for i in case.failed if case.result.tests[i].variables]
    if not failed:
        return []
    want_all = reference_variables(case.package, case.tests)
    for i in failed:
        got, want = case.result.tests[i].variables, want_all[i]
        if got and want:
            found = explain(got, want)
            if found is None:
                return []  # the same tree: the mistake is elsewhere
            title, detail = found
            same = [case.tests[j].name for j in failed
                    if case.result.tests[j].variables == got and want_all[j] == want]
            # Why another path changes the draw; a missing parameter says its own why.
            why = "" if gaps(got, want) else f" {WHY}"
            return [Finding("parameters", title, detail + why, same)]
    return []


def explain(got: Tree, want: Tree) -> tuple[str, str] | None:
    """What differs between two trees, in words; None when they are the same."""
    if got == want:
        return None
    lacking = gaps(got, want)
    if lacking and {p for p, _ in got} <= {p for p, _ in want}:
        first = lacking[0]
        return first.title, (
            f"{first.detail} Flax starts {first.initial}, so a model as `init` makes it "
            "computes the same numbers; the tests that redraw the parameters, as trained "
            f"weights would be, do not: {first.fix}")
    g, w = _modules(got), _modules(want)
    if set(g) == set(w):
        swapped = [(a, b) for a in g for b in g if a < b and g[a] != w[a]
                   and g[a] == w[b] and g[b] == w[a]]
        if swapped:
            a, b = swapped[0]
            return ("Submodules created in the other order", (
                f"`{a}` has the shapes the reference's `{b}` has, and the reverse: the two "
                "were created in the other order, and automatic names follow creation order. "
                "In `nn.Dense(D)(nn.relu(nn.Dense(d_ff)(h)))` Python creates `Dense(D)` "
                "first; write one layer per statement in the order they are applied."))
        diffs = [f"`{m}/{leaf}` is {_fmt(shape)}, the reference's {_fmt(w[m][leaf])}"
                 for m in g for leaf, shape in g[m].items()
                 if leaf in w[m] and shape != w[m][leaf]]
        if diffs:
            return ("Parameters with other shapes than the reference's",
                    "Your parameters have other shapes: " + "; ".join(diffs[:3])
                    + ("." if len(diffs) <= 3 else f"; and {len(diffs) - 3} more."))
    if _same_leaves(list(g.values()), list(w.values())) and list(g) != list(w):
        pairs = [(a, b) for a, b in zip(g, w, strict=True) if a != b]
        detail = ("Your parameters sit under other names than the reference's: "
                  + "; ".join(f"`{a}` where the reference has `{b}`" for a, b in pairs[:6])
                  + ("." if len(pairs) <= 6 else f"; and {len(pairs) - 6} more."))
        if any("MultiHeadAttention_" in a and "MultiHeadDotProductAttention_" in b
               for a, b in pairs):
            detail += (" `nn.MultiHeadAttention` is an alias of "
                       "`nn.MultiHeadDotProductAttention`, but Flax names a submodule after "
                       "the class it was created with: use the long name.")
        else:
            detail += (" Create the submodules inline in `@nn.compact`, unnamed and in the "
                       "statement's order, so they get the reference's automatic names.")
        return "Your submodules have other names than the reference's", detail
    extra = [_show(p) for p, _ in got if p not in dict(want)]
    missing = [_show(p) for p, _ in want if p not in dict(got)]
    if prefix := _common_wrapper(extra, missing):
        return ("Your submodules are wrapped in another module", (
            f"Your parameters sit under `{prefix}/`, the reference's directly under the "
            "top-level module: write the layers in the entry function's own module, not in "
            "a module it calls."))
    parts = []
    if missing:
        parts.append("the reference has " + ", ".join(f"`{p}`" for p in missing[:6])
                     + (" and more" if len(missing) > 6 else "") + ", yours does not")
    if extra:
        parts.append("yours has " + ", ".join(f"`{p}`" for p in extra[:6])
                     + (" and more" if len(extra) > 6 else "") + ", the reference's does not")
    if not parts:
        return None  # the same variables, only listed in another order
    return ("Your parameters are not the reference's",
            "Your parameter tree differs: " + "; ".join(parts) + ". A missing bias or "
            "scale (use_bias, use_scale), an extra layer or a missing one changes the draw "
            "of everything after it as well as the computation.")


def _modules(tree: Tree) -> dict[str, dict[str, tuple[int, ...]]]:
    """Variables grouped by the top-level submodule they belong to (`LayerNorm_0`; the
    `params` collection is implied), each by its path inside it, both in first-seen order."""
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for path, shape in tree:
        parts = path.split("/")
        if parts[0] == "params":
            parts = parts[1:]
        module, rest = (parts[0], "/".join(parts[1:])) if len(parts) > 1 else ("", parts[0])
        out.setdefault(module, {})[rest] = shape
    return out


def _show(path: str) -> str:
    return path.removeprefix("params/")


def _same_leaves(a: list[dict], b: list[dict]) -> bool:
    return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))


def _common_wrapper(extra: list[str], missing: list[str]) -> str:
    """A module path that, taken off the front of every extra path, gives exactly the
    missing ones."""
    if not extra or len(extra) != len(missing):
        return ""
    first = extra[0].split("/")
    for cut in range(1, len(first)):
        prefix = "/".join(first[:cut])
        if all(p.startswith(prefix + "/") for p in extra) and sorted(
                p.removeprefix(prefix + "/") for p in extra) == sorted(missing):
            return prefix
    return ""


def _fmt(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"

