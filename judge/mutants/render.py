"""The mutation report in words, for a terminal (`tensorjudge problems mutants SLUG`)."""

from __future__ import annotations

import math

from judge.mutants.report import MutantResult, MutationReport

_ORDER = {"survived": 0, "accepted": 1, "equivalent": 2, "killed": 3}


def _times(x: float) -> str:
    """A ratio to the tolerance; infinite: an error, a wrong size or non-finite values."""
    return "inf" if math.isinf(x) else f"{x:.3g}x"


def summary(report: MutationReport) -> str:
    r = report
    return (f"score {r.score:.2f}: {len(r.results)} mutants, {r.count('killed')} killed, "
            f"{r.count('survived')} survived, {r.count('equivalent')} equivalent, "
            f"{r.count('accepted')} accepted")


def tolerance_lines(report: MutationReport) -> list[str]:
    low, closest = report.low, report.closest
    if low.verdict == "RE":
        out = [f"the reference in {low.dtype}: RE on {low.test} ({low.error[:200]}): the "
               "tolerance is not proven tight"]
    else:
        word = "the tolerance is tight" if low.verdict == "WA" else \
            "it PASSES: the tolerance is too loose"
        out = [f"the reference in {low.dtype}: {low.verdict}, at worst {_times(low.worst)} "
               f"the tolerance (on {low.test}): {word}"]
    if closest is not None:
        out.append(f"smallest margin: {_times(closest.worst)} the tolerance "
                   f"({closest.mutant.title}, {closest.mutant.operator.name})")
    return out


def render(report: MutationReport, *, all_killed: bool = True) -> str:
    """The summary, the tolerance's two checks, then each mutant (survivors first) and the
    tests that would kill the survivors."""
    r = report
    lines = [f"{r.problem}: {summary(r)}", *("  " + x for x in tolerance_lines(r))]
    width = max((len(x.mutant.operator.name) for x in r.results), default=0)
    for x in sorted(r.results, key=lambda x: _ORDER[x.status]):
        if x.status == "killed" and not all_killed:
            continue
        m = x.mutant
        mark = "SURVIVED" if x.status == "survived" else x.status
        lines.append(f"  {mark:10} {m.id}  {m.operator.name:{width}}  {m.title}")
        if x.status == "killed":
            names = ", ".join(x.killed_by[:4]) + (
                f" +{len(x.killed_by) - 4}" if len(x.killed_by) > 4 else "")
            lines.append(f"  {'':10} by {names} (worst {_times(x.worst)} the tolerance)")
        elif x.reason:
            lines.append(f"  {'':10} {x.reason}")
    if r.stale:
        lines.append(f"  declared in problem.toml but no such mutant is left alive (or "
                     f"equivalent): {', '.join(r.stale)}")
    if r.unexplained:
        lines.append(f"  equivalent with no reason in problem.toml ([[mutants.equivalent]]: "
                     f"why, for every parameter value): {', '.join(r.unexplained)}")
    if r.suggested:
        lines.append(f"  tests that would kill the survivors ({r.extra} inputs searched):")
        for c in r.suggested:
            lines.extend("    " + t for t in c.toml().splitlines())
    return "\n".join(lines)


def markdown(report: MutationReport) -> str:
    """The report as a section of docs/mutants.md: the figures, a row per operator, and the
    mutants no test kills (equivalent, accepted) with why."""
    r = report
    operators: dict[str, list[MutantResult]] = {}
    for x in r.results:
        operators.setdefault(x.mutant.operator.name, []).append(x)
    out = [f"### {r.problem}: score {r.score:.2f}", "",
           f"{len(r.results)} mutants from {len(operators)} operators: "
           f"{r.count('killed')} killed, {r.count('survived')} survived, "
           f"{r.count('equivalent')} equivalent, {r.count('accepted')} accepted.",
           *(f"{line[0].upper()}{line[1:]}." for line in tolerance_lines(r)), "",
           "| operator | mutants | killed | equivalent | accepted | survived | weakest kill |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, xs in operators.items():
        counts = [sum(1 for x in xs if x.status == s)
                  for s in ("killed", "equivalent", "accepted", "survived")]
        kills = [x.worst for x in xs if x.status == "killed"]
        weakest = _times(min(kills)) if kills else "-"
        out.append(f"| `{name}` | {len(xs)} | " + " | ".join(map(str, counts))
                   + f" | {weakest} |")
    for status in ("survived", "equivalent", "accepted"):
        xs = [x for x in r.results if x.status == status]
        if xs:
            out += ["", f"{status.capitalize()}:", ""]
            out += [f"- {x.mutant.title} (`{x.mutant.id}`): {x.reason}" for x in xs]
    return "\n".join(out)
