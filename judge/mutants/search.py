"""Inputs a problem's tests do not cover, from its own generator: the extra inputs that tell an
equivalent mutant from a survivor, and the search for inputs that would kill a survivor.

    candidates(package, limit=32) -> [Candidate]   varied tests, in the order they are tried
    cover(kills) -> [Candidate]                     few candidates that kill every survivor

A candidate is one of the package's tests with one change, in the package's own vocabulary
(no knowledge of a particular generator): two of its integer parameters made equal (`T_q ==
T_kv`, a head per feature `H == D`), one parameter set to a value another test gives it
(a scale, a mask kind, a padding, an init seed...), or another seed. A change the generator
refuses (a width the heads do not divide) is skipped. Host code: it calls the generator (plain
NumPy, as loading a package does), never a solution.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import permutations

from judge.package import Package, TestSpec

Value = int | float | bool | str


@dataclass(frozen=True)
class Candidate:
    spec: TestSpec
    base: str  # the test it varies
    change: str  # the change, in words: "T_kv = T_q (4)", "scale = 30.0", "seed 1011"

    def toml(self) -> str:
        """The candidate as a problem.toml test, ready to paste."""
        params = ", ".join(f"{k} = {_toml_value(v)}" for k, v in self.spec.params.items())
        return (f'[[tests]]\nname = "{self.spec.name}"\nkind = "hidden"\n'
                f"seed = {self.spec.seed}\n"
                f'description = "{self.base} with {self.change}"\n'
                f"params = {{ {params} }}")


def _toml_value(v: Value) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def _is_int(v: Value) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _values(tests: list[TestSpec]) -> dict[str, list[Value]]:
    """Each parameter's values over the tests, first seen first."""
    seen: dict[str, list[Value]] = {}
    for t in tests:
        for k, v in t.params.items():
            if v not in seen.setdefault(k, []):
                seen[k].append(v)
    return seen


def _bases(tests: list[TestSpec]) -> list[TestSpec]:
    """One test per shape (its integer parameters), in the package's order."""
    shapes: dict[tuple[tuple[str, Value], ...], TestSpec] = {}
    for t in tests:
        shape = tuple(sorted((k, v) for k, v in t.params.items() if _is_int(v)))
        shapes.setdefault(shape, t)
    return list(shapes.values())


def _changes(base: TestSpec, values: dict[str, list[Value]]
             ) -> Iterator[tuple[str, str, dict[str, Value], int]]:
    """(queue, change, params, seed) of each variation of `base`. Sizes made equal only
    between parameters of one family (the same first letter: T_q and T_kv, V_src and V_tgt,
    D and d_ff): a head per feature or a batch as long as a sequence says little."""
    ints = [k for k, v in base.params.items() if _is_int(v)]
    for a, b in permutations(ints, 2):
        if base.params[a] != base.params[b] and a[0].lower() == b[0].lower():
            yield "=".join(sorted((a, b))), f"{b} = {a} ({base.params[a]})", \
                {**base.params, b: base.params[a]}, base.seed
    for name, vals in values.items():
        for v in vals:
            if base.params.get(name) != v and (not _is_int(v) or name not in base.params):
                yield name, f"{name} = {v!r}", {**base.params, name: v}, base.seed
    yield "seed", f"seed {base.seed + 1000}", dict(base.params), base.seed + 1000


def candidates(package: Package, limit: int = 32) -> list[Candidate]:
    """Up to `limit` valid variations of the package's tests, none equal to a test, taken
    from each kind of change in turn (sizes made equal, each parameter's values, the seed),
    and within a kind from each test shape in turn: a short list is a varied one."""
    values = _values(package.tests)
    queues: dict[str, list[tuple[int, int, str, dict[str, Value], int]]] = {}
    for i, base in enumerate(_bases(package.tests)):
        counts: dict[str, int] = {}
        for queue, change, params, seed in _changes(base, values):
            k = counts[queue] = counts.get(queue, -1) + 1
            queues.setdefault(queue, []).append((k, i, f"{base.name}: {change}", params, seed))
    for q in queues.values():
        q.sort(key=lambda r: (r[0], r[1]))
    ordered = [q[n] for n in range(max((len(q) for q in queues.values()), default=0))
               for q in queues.values() if n < len(q)]
    known = {(t.seed, tuple(sorted(t.params.items()))) for t in package.tests}
    out: list[Candidate] = []
    for _, _, label, params, seed in ordered:
        key = (seed, tuple(sorted(params.items())))
        if key in known or not _valid(package, seed, params):
            continue
        known.add(key)
        varied, _, change = label.partition(": ")
        name = f"generated-{len(out) + 1}"
        out.append(Candidate(TestSpec(name=name, kind="hidden", seed=seed, params=params),
                             varied, change))
        if len(out) >= limit:
            break
    return out


def _valid(package: Package, seed: int, params: dict[str, Value]) -> bool:
    try:
        args = package.generator.generate(seed, **params)
        shape = tuple(int(s) for s in package.generator.output_shape(args))
    except Exception:  # noqa: BLE001 - a variation the generator refuses is no input
        return False
    return bool(shape) and all(s > 0 for s in shape)


def cover(kills: dict[str, list[Candidate]]) -> list[Candidate]:
    """A few candidates that between them kill every survivor that any kills (greedy set
    cover: each pick kills the most survivors still alive; ties: the earlier candidate)."""
    alive = {m for m, ks in kills.items() if ks}
    order: list[Candidate] = []
    for ks in kills.values():
        order.extend(k for k in ks if k not in order)
    picked: list[Candidate] = []
    while alive:
        best = max(order, key=lambda c: sum(1 for m in alive if c in kills[m]))
        picked.append(best)
        alive = {m for m in alive if best not in kills[m]}
    return picked
