"""Loading a problem package: the manifest read and checked, the statement, starter,
generator and reference found, the known mistakes' words read; a broken package is refused with
every defect listed, each naming the file, the field and why. Also the package folders under a
root, and a package's Python files loaded as modules."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from judge import pysource
from judge.package.calibration import (
    CALIBRATION_FILE,
    Calibration,
    ResolvedLimits,
    read_calibration,
    resolve_limits,
)
from judge.package.manifest import Manifest, Mistake, TestSpec
from judge.verdicts import VERDICT_FOLDERS, Verdict

MISTAKES_FILE = "submissions/wrong_answer/mistakes.toml"


@dataclass(frozen=True)
class Defect:
    file: str
    field: str
    why: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.why}"


class PackageError(Exception):
    def __init__(self, path: Path, defects: list[Defect]):
        self.path = path
        self.defects = defects
        lines = "\n".join(f"  - {d}" for d in defects)
        super().__init__(f"problem package {path} is broken ({len(defects)} defects):\n{lines}")


@dataclass(frozen=True)
class Submission:
    """A packaged submission and the verdict its folder declares."""

    path: Path
    expected: Verdict

    @property
    def label(self) -> str:
        return f"{self.expected.folder}/{self.path.name}"


@dataclass(frozen=True)
class Package:
    path: Path
    manifest: Manifest
    statement: str
    starter: str | None
    reference_path: Path
    generator_path: Path
    # `starters/<framework>.py`, for problems that allow several frameworks (`starter` is
    # the first framework's).
    starters: dict[str, str] = field(default_factory=dict)

    # Convenience views of the manifest.
    @property
    def slug(self) -> str:
        return self.manifest.slug

    @property
    def title(self) -> str:
        return self.manifest.title

    @property
    def entry_point(self) -> str:
        return self.manifest.entry_point

    @property
    def tests(self) -> list[TestSpec]:
        return self.manifest.tests

    @property
    def samples(self) -> list[TestSpec]:
        return [t for t in self.manifest.tests if t.kind == "sample"]

    def select(self, samples_only: bool) -> list[TestSpec]:
        return self.samples if samples_only else list(self.manifest.tests)

    @cached_property
    def generator(self) -> ModuleType:
        return load_module(self.generator_path, f"tj_generator_{self.slug.replace('-', '_')}")

    @cached_property
    def calibration(self) -> Calibration | None:
        """What its accepted submissions spend (`calibration.toml`; checked by load_package)."""
        return read_calibration(self.path)[0]

    @cached_property
    def limits(self) -> ResolvedLimits:
        """The limits submissions are judged under: the manifest's, calibrated where it
        leaves them open."""
        return resolve_limits(self.manifest.limits, self.calibration)

    @cached_property
    def warmup_source(self) -> str | None:
        """The judge-owned warm-up (`warmup.py`), run in a sandbox before any job arrives."""
        f = self.path / "warmup.py"
        return f.read_text(encoding="utf-8") if f.is_file() else None

    @cached_property
    def reference_source(self) -> str:
        return self.reference_path.read_text(encoding="utf-8")

    @cached_property
    def content_hash(self) -> str:
        """Changes whenever anything that decides verdicts or what users read changes."""
        h = hashlib.sha256()
        # Where the reference lives is not content (its source is hashed below): a package
        # folder and the same package stored (which brings its reference in as
        # reference.py: app/services/archives.py) must hash the same, or what `problems
        # prepare` computed for the one would be missed by a service judging the other.
        manifest = self.manifest.model_dump(mode="json")
        manifest.pop("reference", None)
        h.update(json.dumps(manifest, sort_keys=True).encode())
        h.update(self.statement.encode())
        h.update(self.reference_source.encode())
        h.update(self.generator_path.read_bytes())
        h.update((self.warmup_source or "").encode())
        calibration = self.path / CALIBRATION_FILE  # it sets limits
        h.update(calibration.read_bytes() if calibration.is_file() else b"")
        # The known mistakes are what a wrong answer reads: their words and their code.
        mistakes = self.path / MISTAKES_FILE
        h.update(mistakes.read_bytes() if mistakes.is_file() else b"")
        for f in self.wrong_answer_files():
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        return h.hexdigest()

    def wrong_answer_files(self) -> list[Path]:
        return sorted((self.path / "submissions" / VERDICT_FOLDERS[Verdict.WA]).glob("*.py"))

    @cached_property
    def mistakes(self) -> dict[str, Mistake]:
        """The known mistakes by wrong-answer file name (checked by load_package)."""
        found, defects = read_mistakes(self.path)
        if defects:
            raise PackageError(self.path, defects)
        return found

    def submissions(self) -> list[Submission]:
        found: list[Submission] = []
        root = self.path / "submissions"
        for verdict, folder in VERDICT_FOLDERS.items():
            for f in sorted((root / folder).glob("*.py")):
                found.append(Submission(f, verdict))
        return found


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def load_package(path: Path | str, *, check_generator: bool = True) -> Package:
    """Load and check a package; raise PackageError listing every defect found."""
    path = Path(path).resolve()
    defects: list[Defect] = []
    if not path.is_dir():
        raise PackageError(path, [Defect(str(path), "", "not a directory")])

    manifest: Manifest | None = None
    mpath = path / "problem.toml"
    if not mpath.is_file():
        defects.append(Defect("problem.toml", "", "missing"))
    else:
        try:
            data = tomllib.loads(mpath.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            defects.append(Defect("problem.toml", "", f"not valid TOML: {e}"))
        else:
            try:
                manifest = Manifest.model_validate(data)
            except ValidationError as e:
                for err in e.errors():
                    defects.append(Defect("problem.toml", _loc(err["loc"]), err["msg"]))

    statement = ""
    spath = path / "statement.md"
    if not spath.is_file():
        defects.append(Defect("statement.md", "", "missing"))
    else:
        statement = spath.read_text(encoding="utf-8")
        if not statement.strip():
            defects.append(Defect("statement.md", "", "empty"))

    starter_path = path / "starter.py"
    starter = starter_path.read_text(encoding="utf-8") if starter_path.is_file() else None
    if starter is not None:
        try:
            compile(starter, "starter.py", "exec")
        except SyntaxError as e:
            defects.append(Defect("starter.py", f"line {e.lineno}", f"syntax error: {e.msg}"))

    gpath = path / "generator.py"
    if not gpath.is_file():
        defects.append(Defect("generator.py", "", "missing"))

    ref_path = path / "reference.py"
    if manifest is not None:
        if manifest.slug != path.name:
            defects.append(
                Defect("problem.toml", "slug",
                       f"{manifest.slug!r} differs from folder {path.name!r}")
            )
        ref_path = (path / manifest.reference).resolve()
        if not ref_path.is_file():
            defects.append(Defect("problem.toml", "reference", f"no file at {manifest.reference}"))
        else:
            _check_defines(ref_path, manifest.entry_point, "reference", defects)
        names = [t.name for t in manifest.tests]
        for dup in sorted({n for n in names if names.count(n) > 1}):
            defects.append(Defect("problem.toml", "tests", f"test name {dup!r} is used twice"))
        if not any(t.kind == "sample" for t in manifest.tests):
            defects.append(Defect("problem.toml", "tests", "no sample test (Run needs one)"))
        if not any(t.kind == "hidden" for t in manifest.tests):
            defects.append(Defect("problem.toml", "tests", "no hidden test"))
        if starter is not None:
            _check_defines_source(starter, manifest.entry_point, "starter.py", defects)

    starters = _read_starters(path, manifest, defects)
    calibration_defect = read_calibration(path)[1]
    if calibration_defect:
        defects.append(Defect(CALIBRATION_FILE, "", calibration_defect))
    defects.extend(read_mistakes(path)[1])

    if manifest is not None and gpath.is_file() and check_generator and not defects:
        _check_generator(gpath, manifest, defects)

    if defects:
        raise PackageError(path, defects)
    assert manifest is not None
    return Package(path, manifest, statement, starter, ref_path, gpath, starters)


def _read_starters(path: Path, manifest: Manifest | None, defects: list[Defect]
                   ) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in sorted((path / "starters").glob("*.py")):
        label, source = f"starters/{f.name}", f.read_text(encoding="utf-8")
        if manifest is not None:
            if f.stem not in manifest.frameworks:
                defects.append(Defect(label, "", f"{f.stem!r} is not one of the frameworks"))
            _check_defines_source(source, manifest.entry_point, label, defects)
        out[f.stem] = source
    return out


def read_mistakes(path: Path) -> tuple[dict[str, Mistake], list[Defect]]:
    """`submissions/wrong_answer/mistakes.toml`: one table per wrong-answer file, keyed by its
    file name. Every packaged wrong answer needs one (a learner whose output matches it reads
    it), and every table names a packaged file."""
    files = sorted(f.name for f in (path / "submissions" / "wrong_answer").glob("*.py"))
    mpath = path / MISTAKES_FILE
    defects: list[Defect] = []
    if not mpath.is_file():
        if files:
            defects.append(Defect(MISTAKES_FILE, "", f"missing: {len(files)} wrong answers "
                                  "need a title and an explanation each"))
        return {}, defects
    try:
        data = tomllib.loads(mpath.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        return {}, [Defect(MISTAKES_FILE, "", f"not valid TOML: {e}")]
    found: dict[str, Mistake] = {}
    for name, table in data.items():
        if name not in files:
            defects.append(Defect(MISTAKES_FILE, name, "no such file in submissions/wrong_answer"))
            continue
        if not isinstance(table, dict):
            defects.append(Defect(MISTAKES_FILE, name, "must be a table (title, detail, "
                                  "statement)"))
            continue
        try:
            found[name] = Mistake.model_validate(table)
        except ValidationError as e:
            for err in e.errors():
                defects.append(Defect(MISTAKES_FILE, f"{name}.{_loc(err['loc'])}", err["msg"]))
    for name in files:
        if name not in data:
            defects.append(Defect(MISTAKES_FILE, name, "this wrong answer has no entry: give it "
                                  "a title, a detail and a statement"))
    titles = [m.title for m in found.values()]
    for dup in sorted({t for t in titles if titles.count(t) > 1}):
        defects.append(Defect(MISTAKES_FILE, "title", f"{dup!r} is used twice"))
    return found, defects


def _check_defines(file: Path, entry: str, label: str, defects: list[Defect]) -> None:
    _check_defines_source(file.read_text(encoding="utf-8"), entry, label, defects)


def _check_defines_source(source: str, entry: str, label: str, defects: list[Defect]) -> None:
    try:
        tree = pysource.parse(source)
    except SyntaxError as e:
        defects.append(Defect(label, f"line {e.lineno}", f"syntax error: {e.msg}"))
        return
    if not any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == entry
        for n in tree.body
    ):
        defects.append(Defect(label, "entry_point", f"does not define {entry}()"))


def _check_generator(gpath: Path, manifest: Manifest, defects: list[Defect]) -> None:
    """Every test's inputs must be buildable, of allowed types, and the same on every call."""
    from judge import wire

    try:
        module = load_module(gpath, f"tj_gencheck_{manifest.slug.replace('-', '_')}")
    except Exception as e:  # noqa: BLE001 - a broken generator is a package defect
        defects.append(Defect("generator.py", "", f"does not import: {type(e).__name__}: {e}"))
        return
    for fn in ("generate", "output_shape"):
        if not callable(getattr(module, fn, None)):
            defects.append(Defect("generator.py", fn, "missing function"))
    if defects:
        return
    for i, test in enumerate(manifest.tests):
        field_name = f"tests[{i}] ({test.name})"
        try:
            args = module.generate(test.seed, **test.params)
            again = module.generate(test.seed, **test.params)
            shape = tuple(int(s) for s in module.output_shape(args))
        except Exception as e:  # noqa: BLE001
            defects.append(Defect("generator.py", field_name, f"{type(e).__name__}: {e}"))
            continue
        try:
            wire.check_args(args)
        except wire.WireError as e:
            defects.append(Defect("generator.py", field_name, str(e)))
            continue
        if wire.args_digest(args) != wire.args_digest(again):
            defects.append(Defect("generator.py", field_name, "not deterministic"))
        if not shape or any(s <= 0 for s in shape):
            defects.append(Defect("generator.py", field_name, f"bad output_shape {shape}"))


def discover(root: Path | str) -> list[Path]:
    """Package folders directly under root, in name order."""
    root = Path(root)
    return sorted(p for p in root.iterdir() if (p / "problem.toml").is_file())
