"""What went wrong: the findings a result carries, built once after a run that is not AC.

`diagnose(case)` is the one entry point the engine calls. Each source of findings is a
function of the `Case` returning a list of findings; `SOURCES` lists them, and adding one is
adding it there. A source that fails is skipped (a finding never changes a verdict, and a
diagnosis that cannot be made is simply not made).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from judge.compare import hints
from judge.diagnosis.case import Case
from judge.diagnosis.location import consistent, location, location_plan
from judge.diagnosis.mistakes import Observed, name_mistakes
from judge.diagnosis.mutant_names import Seen, name_by_mutants
from judge.diagnosis.params import parameters
from judge.diagnosis.probes import probe_findings, probe_plan
from judge.diagnosis.size_mixups import size_mixups
from judge.trusted.known_mistakes import KnownMistake, bank, mutant_bank
from judge.verdicts import Finding, Verdict

log = logging.getLogger(__name__)


def known_mistakes(case: Case) -> list[Finding]:
    """The packaged wrong answers' names first; where none fits, the reference's mutants'."""
    return packaged_mistakes(case) or mutant_mistakes(case)


def packaged_mistakes(case: Case) -> list[Finding]:
    observed = [Observed(spec.name, t.verdict is not Verdict.AC, t.output, want)
                for spec, t, want in zip(case.tests, case.result.tests, case.expected,
                                         strict=True)
                if t.verdict is not None]
    # Only an output can match a mistake's: without one the bank is not even computed.
    if not any(ob.failed and ob.output is not None for ob in observed):
        return []
    # Tests that were not run say nothing either way.
    ran = [i for i, t in enumerate(case.result.tests) if t.verdict is not None]
    known = [KnownMistake(m.file, m.mistake, [m.outputs[i] for i in ran])
             for m in bank(case.package, case.tests)]
    return name_mistakes(known, observed, case.tol)


def mutant_mistakes(case: Case) -> list[Finding]:
    """The one mutant of the reference the submission behaves like, on every test that ran
    (outputs or errors); nothing while the mutants' outcomes are still being computed."""
    runs = mutant_bank(case.package)
    if runs is None:
        return []
    index = {t.name: i for i, t in enumerate(case.package.tests)}
    seen: list[tuple[int, Seen]] = []
    for spec, t, want in zip(case.tests, case.result.tests, case.expected, strict=True):
        if t.verdict is None:
            continue
        if spec.name not in index:
            return []
        sizes = frozenset(v for v in spec.params.values()
                          if isinstance(v, int) and not isinstance(v, bool))
        seen.append((index[spec.name], Seen(spec.name, t.verdict, t.output, want,
                                            t.message or "", sizes)))
    return name_by_mutants(runs, seen, case.tol)


_NUMERIC: dict[str, tuple[str, str]] = {
    "non-finite": (
        "NaN or infinite values where the reference is finite",
        "Something overflows or divides by zero. The usual cause is exp in a softmax on large "
        "scores: subtract each row's maximum before exp (or use the framework's softmax), and "
        "check that no variance or sum you divide by can be zero."),
    "zeros": (
        "The output is all zeros",
        "Nothing of the computation reaches the output: return the final value, not a "
        "placeholder or a buffer that is never filled."),
    "transposed": (
        "The output is transposed before flattening",
        "The values are right but the last two axes are swapped: return the output in the "
        "shape the signature gives, then flatten it."),
    "reordered": (
        "The right values in the wrong order",
        "The output holds the expected values in another order: check the order of the axes "
        "before flattening (for example heads merged back in the wrong order)."),
    "scaled": (
        "The output is off by a constant factor",
        "The output is the expected output times a constant: a scale is wrong somewhere "
        "linear (a missing or extra factor or normalisation)."),
    "negated": (
        "The output has its sign flipped",
        "The output is the expected output negated: look for a subtraction written the "
        "wrong way round."),
}


def numeric(case: Case) -> list[Finding]:
    """The comparison's generic readings (per-test messages keep them too), one finding per
    kind of reading with the tests it was seen on."""
    seen: dict[str, list[str]] = {}
    for i in case.failed:
        t = case.result.tests[i]
        # An output within the tolerance (wrong for its parameter tree) shows no symptom.
        if t.output is None or t.output.size != case.expected[i].size or t.mismatches == 0:
            continue
        for h in hints(t.output, case.expected[i], case.shapes[i], case.tol):
            if h.key in _NUMERIC:
                seen.setdefault(h.key, []).append(t.name)
    return [Finding("numeric", _NUMERIC[k][0], _NUMERIC[k][1], names)
            for k, names in sorted(seen.items(), key=lambda kv: list(_NUMERIC).index(kv[0]))]


def extra_runs(case: Case) -> list[Finding]:
    """The findings that run the submission once more (the location's switched-off
    variants, the property probes' derived inputs): in one sandbox job together."""
    jobs, probed = probe_plan(case)
    plan, located = location_plan(case)
    if case.run is None or not (len(probed) + len(located)):
        return []
    outs = case.run(probed.args + located.args, probed.sizes + located.sizes,
                    probed.redraws + located.redraws)
    found = probe_findings(case, jobs, outs[:len(probed)])
    if plan is not None:
        found += location(case, plan, outs[len(probed):])
    return found


# Every source of findings, in no particular order (`ordered` sorts by certainty).
SOURCES: list[Callable[[Case], list[Finding]]] = [known_mistakes, extra_runs, parameters,
                                                   numeric, size_mixups]


# Most certain first: an output equal to a known mistake's is near proof; the sub-layer the
# outputs differ in, and a parameter tree that differs, are facts about the code; a broken
# property is a fact about the outputs; numeric and error hints are readings of symptoms.
KIND_ORDER: tuple[str, ...] = ("known-mistake", "location", "parameters", "property",
                               "numeric", "error")


def ordered(findings: list[Finding]) -> list[Finding]:
    """Most certain first (stable within a kind), each title once."""
    seen: set[str] = set()
    out: list[Finding] = []
    for f in sorted(findings, key=lambda f: KIND_ORDER.index(f.kind)):
        if f.title not in seen:
            seen.add(f.title)
            out.append(f)
    return out


def diagnose(case: Case) -> list[Finding]:
    """The findings for a judged submission, most certain first; [] when nothing is known."""
    if case.result.verdict in (Verdict.AC, Verdict.CE, Verdict.IE):
        return []
    findings: list[Finding] = []
    for source in SOURCES:
        try:
            findings.extend(source(case))
        except Exception:  # noqa: BLE001 - a diagnosis is a bonus, never a failure
            log.exception("diagnosis source %s failed on %s", source.__name__, case.package.slug)
    return ordered(agreeing(findings, case))


def agreeing(findings: list[Finding], case: Case) -> list[Finding]:
    """The findings without the names that contradict the location: a mistake named at a
    site in another sub-layer than the one the outputs differ in points the learner at the
    wrong part, which costs more than no name."""
    loc = case.package.manifest.location
    where = next((f for f in findings if f.kind == "location"), None)
    if loc is None or where is None:
        return findings
    return [f for f in findings
            if f.kind == "location" or not f.sites or consistent(f.sites, where.sites, loc)]
