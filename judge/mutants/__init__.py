"""Mutants of a reference: the classic mistakes of this field, made on purpose.

    mutants(source, framework=None) -> [Mutant]   every operator at every site
    OPERATORS                                     the catalogue, in order

Host code: the catalogue reads and rewrites source text and runs nothing. What runs the
mutants is apart: judge/trusted/mutant_outputs.py (in the trusted process) and the mutation
report built on it (report.py; search.py for the extra inputs, render.py for words).
"""

from judge.mutants.catalogue import OPERATORS, RULES, mutants
from judge.mutants.model import FRAMEWORKS, Mutant, Operator

__all__ = ["FRAMEWORKS", "OPERATORS", "RULES", "Mutant", "Operator", "mutants"]
