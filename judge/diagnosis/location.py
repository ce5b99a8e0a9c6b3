"""Where a wrong answer goes wrong: the sub-layer, found by switching sub-layers off.

The judge controls every parameter the block computes with (the weights of the problems that
take them as arguments, the judge's draw of a Flax model's: judge/portable/flax_redraw.py), so
it can switch a sub-layer off in the submission and in the reference alike: its output
projection zero, its contribution to the residual stream nothing (judge/package/location.py).
The submission runs once more, in one sandbox job, on a failed test's inputs under every
variant: all on, all off, each sub-layer alone off, each alone on; the reference's outputs for
the same variants are computed in the trusted process ahead (judge/trusted/variant_outputs.py).

- all off still differs: the mistake is in what is left (`rest`: the embeddings, LayerNorms,
  output head, the flattening...);
- else the sub-layers that differ switched on alone are wrong (the others agree);
- else, each agreeing alone, the ones whose switching off makes the whole agree are wired
  wrong together (which output feeds which).

A variant the submission or the reference could not run says nothing, and a finding whose
evidence is not all there is not made. The location is what other names must agree with: a
named mistake that sits elsewhere is not shown (diagnose.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judge.diagnosis.case import Case, Extra
from judge.diagnosis.params import explain, reference_variables
from judge.package import Tolerance
from judge.package.location import Location, Variant, switched_off, variants
from judge.trusted.variant_outputs import variant_bank
from judge.verdicts import Finding, Part, Verdict

REST = "rest"


@dataclass(frozen=True)
class Plan:
    """The variants of one wrong test to run the submission on."""

    test: int
    variants: list[Variant]


def location_plan(case: Case) -> tuple[Plan | None, Extra]:
    loc = case.package.manifest.location
    if loc is None or case.run is None or case.result.verdict is not Verdict.WA:
        return None, Extra()
    bank = variant_bank(case.package)
    if not bank:
        return None, Extra()
    i = _target(case, bank)
    if i is None:
        return None, Extra()
    spec, flax = case.tests[i], "flax" in case.package.manifest.frameworks
    vs = variants(loc)
    redraw = spec.redraw.model_dump() if spec.redraw else None
    runs = [switched_off(loc, v.off, case.args[i], redraw, flax) for v in vs]
    return Plan(i, vs), Extra([a for a, _ in runs], [int(case.expected[i].size)] * len(vs),
                              [r for _, r in runs])


def location(case: Case, plan: Plan, outs: list[np.ndarray | None]) -> list[Finding]:
    loc = case.package.manifest.location
    bank = variant_bank(case.package)
    if loc is None or not bank:
        return []
    spec = case.tests[plan.test]
    agree = agreement(plan.variants, outs, [bank.get((spec.name, v.key)) for v in plan.variants],
                      case.tol)
    wrong, together = locate(loc, agree)
    if not wrong:
        return []
    return [_finding(case, loc, plan.test, wrong, together, agree)]


def located_sites(loc: Location, wrong: list[str]) -> tuple[str, ...]:
    """The site labels of a location (sub-layer names, or REST)."""
    return tuple(_sites(loc, wrong))


def _target(case: Case, bank: dict) -> int | None:
    """The first wrong test with an output of the right size whose variants the reference
    has (an overflow is located as any other difference), and, for a Flax model, the
    reference's parameter tree (another tree has other submodule names: switching them off by
    name would switch nothing off)."""
    trees = None
    for i in case.failed:
        t, spec = case.result.tests[i], case.tests[i]
        if (t.verdict is not Verdict.WA or t.output is None
                or t.output.size != case.expected[i].size or (spec.name, "on") not in bank):
            continue
        if "flax" in case.package.manifest.frameworks:
            trees = trees or reference_variables(case.package, case.tests)
            want = trees[i]
            if t.variables is None or want is None or explain(t.variables, want):
                continue
        return i
    return None


def agreement(vs: list[Variant], got: Sequence[object], want: Sequence[object],
              tol: Tolerance) -> dict[str, bool | None]:
    """Per variant, whether an output agrees with the reference's within the tolerance (None
    where either is missing or an error, or where NaN spoils it)."""
    pairs = {v.key: (g, w) for v, g, w in zip(vs, got, want, strict=True)
             if isinstance(g, np.ndarray) and isinstance(w, np.ndarray)}
    # NaN or infinity where the reference is finite is a difference like any other, when
    # switching everything off makes it go (switched-off attentions have zero scores: they
    # cannot overflow). A mistake that spoils even that (a row whose keys are all masked)
    # passes through switched-off sub-layers (0 times NaN is NaN): then the spoiled positions
    # are left out, and a variant spoiled entirely says nothing.
    base = pairs.get("off:all")
    leaks = base is None or bool((~np.isfinite(base[0]) & np.isfinite(base[1])).any())
    return {v.key: _close(*pairs[v.key], tol, leaks and v.key != "on")
            if v.key in pairs else None for v in vs}


def _close(got: np.ndarray, want: np.ndarray, tol: Tolerance, unspoiled: bool) -> bool | None:
    """Whether `got` is `want` within the tolerance (`unspoiled`: on the positions where
    `got` is finite or the reference is not; None where there are none)."""
    if got.size != want.size:
        return False
    spoiled = ~np.isfinite(got) & np.isfinite(want)
    if unspoiled and spoiled.any():
        if spoiled.all():
            return None
        got, want = got[~spoiled], want[~spoiled]
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(got - want) <= tol.atol + tol.rtol * np.abs(want)
    return bool(np.all(ok | (np.isnan(got) & np.isnan(want))))


def locate(loc: Location, agree: dict[str, bool | None]) -> tuple[list[str], bool]:
    """The names of the wrong sub-layers (or REST), and whether they are wrong together."""
    names = [s.name for s in loc.sublayers]
    if agree.get("on") is not False:
        return [], False  # the variants do not show the failure: nothing to locate
    if agree.get("off:all") is None:
        return [], False
    if agree["off:all"] is False:
        return [REST], False
    if len(names) == 1:
        return names, False
    alone = {n: agree.get(f"only:{n}") for n in names}
    if any(v is None for v in alone.values()):
        return [], False
    bad = [n for n in names if alone[n] is False]
    # A sub-layer seen through others that differ too is explained by them.
    through = {s.name: set(s.through) for s in loc.sublayers}
    bad = [n for n in bad if not through[n] or not through[n] <= set(bad)] or bad
    if bad:
        return bad, False
    fixing = [n for n in names if agree.get(f"off:{n}") is True]
    return (fixing, True) if len(fixing) >= 2 else ([], False)


def _finding(case: Case, loc: Location, i: int, wrong: list[str], together: bool,
             agree: dict[str, bool | None]) -> Finding:
    spec = case.tests[i]
    titles = {s.name: s.title for s in loc.sublayers}
    sizes = ", ".join(f"{k}={v}" for k, v in spec.params.items()
                      if isinstance(v, int) and not isinstance(v, bool))
    where = f"test `{spec.name}`" + (f" ({sizes})" if sizes else "")
    how = ("switching a sub-layer off sets its output projection to zero, so that the "
           "residual stream passes it unchanged; your block and the reference's run the same "
           "way")
    parts = [Part(s.name, _capital(s.title), s.name not in wrong) for s in loc.sublayers]
    parts.append(Part(REST, _capital(loc.rest), REST not in wrong))
    if wrong == [REST]:
        title = f"The mistake is outside the sub-layers: {loc.rest}"
        detail = (f"With every sub-layer switched off, your output still differs from the "
                  f"reference's on {where} ({how}). What is left is {loc.rest}: the mistake "
                  "is there.")
    elif together:
        pair = _listed([titles[n] for n in wrong])
        title = f"{_capital(pair)} are wired together wrongly"
        detail = (f"Each sub-layer alone computes what the statement's does on {where}, but "
                  f"not together: switching off any of {pair} makes your block agree with "
                  f"the reference ({how}). Look at what feeds what between them: which "
                  "output each reads, and what goes back into the residual stream.")
    else:
        right = [titles[n] for n in titles if n not in wrong]
        title = (f"{_capital(titles[wrong[0]])} does not compute what the statement's does"
                 if len(wrong) == 1 else
                 f"{_capital(_listed([titles[n] for n in wrong]))} do not compute what the "
                 "statement's do")
        them = _listed([titles[n] for n in wrong])
        agrees = (f"Your {_listed([t.removeprefix('the ') for t in right])} "
                  f"{'agrees' if len(right) == 1 else 'agree'} with the reference; {them} "
                  f"{'does' if len(wrong) == 1 else 'do'} not. " if right else "")
        fixed = all(agree.get(f"off:{n}") for n in wrong) and len(wrong) == 1
        detail = (f"{agrees}Switched on alone (the other sub-layers off), {them} "
                  f"{'gives' if len(wrong) == 1 else 'give'} other numbers than the "
                  f"reference's on {where}"
                  + ("; switched off, the rest of your block agrees" if fixed else "")
                  + f" ({how}).")
    notes = [s.note for s in loc.sublayers if s.name in wrong and s.note]
    if notes:
        detail += " " + " ".join(notes)
    return Finding("location", title, detail, [spec.name], parts=parts,
                   sites=tuple(_sites(loc, wrong)))


def _sites(loc: Location, wrong: list[str]) -> list[str]:
    out: list[str] = []
    for s in loc.sublayers:
        if s.name in wrong:
            out += [s.title, *s.sites]
    if REST in wrong:
        out += loc.rest_sites
    return out


def consistent(named: tuple[str, ...], located: tuple[str, ...], loc: Location) -> bool:
    """Whether a mistake named at the site labels `named` can be where the location says
    (a name at a site the package does not place anywhere is not contradicted)."""
    placed = {loc.rest} | set(loc.rest_sites)
    for s in loc.sublayers:
        placed |= {s.title, *s.sites}
    known = [site for site in named if site in placed]
    return not known or any(site in located for site in known)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
