"""What a wrong submission most likely got wrong: findings the judge can name, as plain data.

A finding never changes a verdict. `kind` says which mechanism found it; the list a result
carries is ordered most certain first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

FindingKind = Literal["known-mistake", "parameters", "property", "numeric", "error"]
# Most certain first: an output equal to a known mistake's is near proof; a parameter tree
# that differs is a fact about the code; a broken property is a fact about the outputs; numeric
# and error hints are readings of symptoms.
KIND_ORDER: tuple[str, ...] = ("known-mistake", "parameters", "property", "numeric", "error")


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    title: str  # one line naming the mistake in plain words
    detail: str  # what to change, and where the statement warns about it
    tests: list[str] = field(default_factory=list)  # names of the tests it explains

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "detail": self.detail,
                "tests": list(self.tests)}


def ordered(findings: list[Finding]) -> list[Finding]:
    """Most certain first (stable within a kind), each title once."""
    seen: set[str] = set()
    out: list[Finding] = []
    for f in sorted(findings, key=lambda f: KIND_ORDER.index(f.kind)):
        if f.title not in seen:
            seen.add(f.title)
            out.append(f)
    return out
