"""Problem packages: a typed, validated manifest (`manifest`) plus statement, generator,
reference and known mistakes, loaded and checked as one (`loading`)."""

from judge.package.loading import (
    MISTAKES_FILE,
    Defect,
    Package,
    PackageError,
    Submission,
    discover,
    load_module,
    load_package,
    read_mistakes,
)
from judge.package.manifest import (
    FRAMEWORKS,
    IDENT_RE,
    SLUG_RE,
    Limits,
    Manifest,
    Mistake,
    Probe,
    SizeMixup,
    TestSpec,
    Tolerance,
)

__all__ = [
    "FRAMEWORKS",
    "IDENT_RE",
    "MISTAKES_FILE",
    "SLUG_RE",
    "Defect",
    "Limits",
    "Manifest",
    "Mistake",
    "Package",
    "PackageError",
    "Probe",
    "SizeMixup",
    "Submission",
    "TestSpec",
    "Tolerance",
    "discover",
    "load_module",
    "load_package",
    "read_mistakes",
]
