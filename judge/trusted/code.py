"""The judge's own code that produces or shapes the trusted outputs, hashed into each output's
cache key (judge/trusted/expected.py `test_key`).

An output depends on more than the package and the libraries: on the trusted process that
computes it (judge/trusted/reference_run.py: how it builds the inputs, narrows or widens them,
flattens the result, records a Flax model's variables), on what that process loads (the
package's loading, which finds the generator and the tests), and on the host's side of it
(judge/trusted/: which items a request holds, the process's environment, how outputs and
failures are stored and read). Outputs stored by another version of that code are never
read as this one's: a judge upgraded over a kept cache volume, or a developer's cache after
an edit of reference_run.py, computes them again.

The mutants (judge/mutants/) are not part of it: each mutant's outputs are keyed by its own
source, which is all of the mutants' code that reaches the trusted process.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

# The repository's folder holding `judge/`.
ROOT = Path(__file__).resolve().parents[2]

# Files and folders (their .py files), relative to ROOT. The trusted process loads judge/,
# judge/trusted/, judge/portable/ (the variables' recorder), judge/package/ and what it imports
# (pysource, verdicts): tests/judge/test_trusted_code.py checks that this covers every judge
# module it loads.
TRUSTED_CODE = (
    "judge/__init__.py",
    "judge/package",
    "judge/portable",
    "judge/pysource.py",
    "judge/trusted",
    "judge/verdicts.py",
)


def trusted_files(root: Path = ROOT) -> list[Path]:
    """The files of TRUSTED_CODE under `root`, in a stable order."""
    files: list[Path] = []
    for name in TRUSTED_CODE:
        path = root / name
        files.extend(sorted(path.glob("*.py")) if path.is_dir() else [path])
    return files


def code_hash(root: Path = ROOT) -> str:
    """A hash of the trusted code's files under `root` (names and contents)."""
    if root == ROOT:
        return _own_hash()
    return _hash(root)


@cache
def _own_hash() -> str:
    # Read once: the files of a running judge do not change under it (an edit is taken up
    # by the next process, as the code itself is).
    return _hash(ROOT)


def _hash(root: Path) -> str:
    h = hashlib.sha256()
    for path in trusted_files(root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()
