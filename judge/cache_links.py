"""A cache of trusted outputs started from another's: a test run's private cache from the
developer's, an image's from the set-up's. Outside `judge/trusted` on purpose: that code's
hash is part of every output's key, and copying files changes no output."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

# What a trusted process stores per key (judge/trusted/reference_run.py); not its locks, nor
# the mutants' sources it imports (written again when an output needs computing).
OUTPUT_SUFFIXES = (".npy", ".failed", ".variables.json")


def link_outputs(source: Path, target: Path) -> int:
    """The outputs stored in the cache folder `source`, linked into `target` where missing
    (copied across file systems); how many. Keyed by content, each is the one the code that
    would compute it computes, or never read. A link is never written through: every output
    is stored as a new file that replaces the old name (a temporary file, then os.replace)."""
    if not source.is_dir() or (target.is_dir() and source.resolve() == target.resolve()):
        return 0
    target.mkdir(parents=True, exist_ok=True)
    n = 0
    for entry in os.scandir(source):
        if not entry.name.endswith(OUTPUT_SUFFIXES) or not entry.is_file(follow_symlinks=False):
            continue
        dest = target / entry.name
        if dest.exists():
            continue
        try:
            os.link(entry.path, dest)
        except OSError:  # another file system, or links refused
            shutil.copyfile(entry.path, dest)
        n += 1
    return n
