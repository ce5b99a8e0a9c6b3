"""Mutants of a reference: the classic mistakes of this field, made on purpose.

    mutants(source, framework=None) -> [Mutant]   every operator at every site
    OPERATORS                                     the catalogue, in order

Host code: it reads and rewrites source text and runs nothing.
"""

from judge.mutants.catalogue import OPERATORS, RULES, mutants
from judge.mutants.model import FRAMEWORKS, Mutant, Operator

__all__ = ["FRAMEWORKS", "OPERATORS", "RULES", "Mutant", "Operator", "mutants"]
