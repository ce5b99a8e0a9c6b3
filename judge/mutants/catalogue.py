"""Every operator at every site of a source: the mutants of a reference."""

from __future__ import annotations

from judge.mutants import activation, attention, inputs, layernorm, memory, residual, wiring
from judge.mutants.code import Code, Rule
from judge.mutants.model import FRAMEWORKS, Mutant, Operator

RULES: list[Rule] = [*residual.RULES, *layernorm.RULES, *attention.RULES,
                     *activation.RULES, *inputs.RULES, *memory.RULES, *wiring.RULES]
OPERATORS: list[Operator] = [r.operator for r in RULES]


def mutants(source: str, framework: str | None = None) -> list[Mutant]:
    """Every operator at every site, in catalogue then source order; a mutated source that
    two operators give is kept once (the first); each one compiles."""
    if framework is not None and framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}: one of {', '.join(FRAMEWORKS)}")
    code = Code(source, framework)
    seen = {code.text(code.tree)}
    found: list[Mutant] = []
    for rule in RULES:
        for site in rule.find(code):
            mutated = code.apply(site)
            if mutated in seen:
                continue
            seen.add(mutated)
            compile(mutated, "<mutant>", "exec")
            line = getattr(site.anchor, "lineno", 1)
            found.append(Mutant(rule.operator, code.sites.name(line), line, mutated))
    return found
