"""Problems and their versions.

A version is stored whole in the database as a self-contained package (a deterministic tar.gz
whose manifest points at its own `reference.py`), so a worker on any machine can materialise
it into a local cache keyed by content hash and load it from there.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import re
import shutil
import tarfile
import tempfile
import threading
import tomllib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import func, select

from app.context import Context
from app.db.models import Problem, ProblemTest, ProblemVersion, Submission
from app.services.errors import Conflict, NotFound
from judge.package import SLUG_RE, Package, PackageError, discover, load_package

log = logging.getLogger("tensorjudge.problems")

MAX_ARCHIVE_BYTES = 32 << 20
SAMPLE_VALUES = 8
_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", ".ipynb_checkpoints"}
_REFERENCE_LINE = re.compile(r"""^(\s*reference\s*=\s*)("[^"\n]*"|'[^'\n]*')(.*)$""", re.M)


class PackageRejected(Exception):
    """A package that cannot be accepted, with every reason."""

    def __init__(self, message: str, reasons: list[str]):
        super().__init__(message + "".join(f"\n  - {r}" for r in reasons))
        self.reasons = reasons


# --- packing -----------------------------------------------------------------------------


def _package_files(package: Package) -> dict[str, bytes]:
    """The package's files, its reference brought in as `reference.py`."""
    root = package.path
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or name.endswith((".pyc", ".pyo")):
                continue
            p = Path(dirpath) / name
            if p.is_symlink() or not p.is_file():
                continue
            files[p.relative_to(root).as_posix()] = p.read_bytes()
    if package.manifest.reference != "reference.py":
        toml = files["problem.toml"].decode("utf-8")
        new, n = _REFERENCE_LINE.subn(r'\1"reference.py"\3', toml, count=1)
        if n != 1:
            raise PackageRejected(f"cannot store {package.slug}",
                                  ["problem.toml: the `reference = \"...\"` line was not found"])
        before = tomllib.loads(toml)
        after = tomllib.loads(new)
        before["reference"] = "reference.py"
        if before != after:
            raise PackageRejected(f"cannot store {package.slug}",
                                  ["problem.toml: rewriting `reference` changed other fields"])
        files["problem.toml"] = new.encode("utf-8")
    files["reference.py"] = package.reference_path.read_bytes()
    return files


def _tar_gz(slug: str, files: dict[str, bytes]) -> bytes:
    """Deterministic: same files, same bytes (sorted, no times, no owners)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            data = files[name]
            info = tarfile.TarInfo(f"{slug}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def archive_hash(archive: bytes) -> str:
    return hashlib.sha256(archive).hexdigest()


def _extract(archive: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
            return
        # Pythons before 3.11.4 (Debian 12's 3.11.2) have no extraction filters. Archives are
        # made by pack(): plain files and folders under one relative root, nothing else.
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if (not (member.isfile() or member.isdir()) or Path(member.name).is_absolute()
                    or ".." in parts or not parts):
                raise ValueError(f"refusing archive member {member.name!r}")
            member.mode = 0o755 if member.isdir() else 0o644
            member.uid = member.gid = 0
            member.uname = member.gname = ""
        tar.extractall(dest)


@dataclass
class Packed:
    archive: bytes
    package: Package  # loaded from a materialised copy of `archive`
    workdir: Path  # holds that copy; remove with cleanup()

    @property
    def content_hash(self) -> str:
        """Of the archive: changes with any file of the package (starter, submissions too)."""
        return archive_hash(self.archive)

    def cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)


def pack(path: Path | str) -> Packed:
    """Load a package folder and make its self-contained archive (checked by loading it)."""
    try:
        source = load_package(path)
    except PackageError as e:
        raise PackageRejected(f"{e.path} is not a valid problem package",
                              [str(d) for d in e.defects]) from e
    archive = _tar_gz(source.slug, _package_files(source))
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise PackageRejected(f"cannot store {source.slug}",
                              [f"the package is {len(archive) >> 20} MiB packed, "
                               f"more than {MAX_ARCHIVE_BYTES >> 20} MiB"])
    workdir = Path(tempfile.mkdtemp(prefix="tj-pack-"))
    try:
        _extract(archive, workdir)
        package = load_package(workdir / source.slug)
    except PackageError as e:
        shutil.rmtree(workdir, ignore_errors=True)
        raise PackageRejected(f"the stored copy of {source.slug} does not load",
                              [str(d) for d in e.defects]) from e
    return Packed(archive, package, workdir)


# --- materialising -----------------------------------------------------------------------

_pkg_lock = threading.Lock()
_pkg_cache: OrderedDict[str, Package] = OrderedDict()
_PKG_CACHE_SIZE = 32


def materialise(cache_root: Path, content_hash: str, slug: str,
                archive: Callable[[], bytes]) -> Path:
    """The package folder of a version in the local cache, extracted once per content hash
    (atomically: concurrent workers on one machine may race, one wins)."""
    final = cache_root / content_hash
    folder = final / slug
    if (folder / "problem.toml").is_file():
        return folder
    cache_root.mkdir(parents=True, exist_ok=True)
    data = archive()
    if archive_hash(data) != content_hash:
        raise RuntimeError(f"the stored archive of {slug}@{content_hash[:12]} is corrupt")
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=cache_root))
    try:
        _extract(data, tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not (folder / "problem.toml").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def load_version(ctx: Context, version_id: int) -> Package:
    """The loaded package of a stored version (cached in memory and on disk)."""
    with ctx.db.transaction() as s:
        row = s.execute(select(ProblemVersion.content_hash, Problem.slug)
                        .join(Problem, Problem.id == ProblemVersion.problem_id)
                        .where(ProblemVersion.id == version_id)).first()
    if row is None:
        raise NotFound(f"no problem version {version_id}")
    content_hash, slug = row
    with _pkg_lock:
        if content_hash in _pkg_cache:
            _pkg_cache.move_to_end(content_hash)
            return _pkg_cache[content_hash]

    def fetch() -> bytes:
        with ctx.db.transaction() as s:
            data = s.scalar(select(ProblemVersion.archive)
                            .where(ProblemVersion.id == version_id))
        assert data is not None
        return data

    folder = materialise(ctx.settings.package_cache_dir, content_hash, slug, fetch)
    package = load_package(folder, check_generator=False)
    with _pkg_lock:
        _pkg_cache[content_hash] = package
        while len(_pkg_cache) > _PKG_CACHE_SIZE:
            _pkg_cache.popitem(last=False)
    return package


# --- adding and updating -----------------------------------------------------------------


@dataclass(frozen=True)
class VersionView:
    slug: str
    number: int
    content_hash: str
    title: str
    created: bool  # False: the content equals the current version's, nothing was added


Validator = Callable[[Package], list[str]]  # failures; empty means valid


def sandbox_validator(ctx: Context, progress: Callable[[Any], None] | None = None) -> Validator:
    """Runs the reference and every packaged submission (judge.validate) in the sandbox."""

    def run(package: Package) -> list[str]:
        from judge.sandbox import make_sandbox
        from judge.validate import validate

        st = ctx.settings
        sandbox = make_sandbox(st.sandbox, bwrap=st.bwrap, docker_host=st.docker_host,
                               docker_image=st.docker_image,
                               docker_cache_volume=st.docker_cache_volume)
        report = validate(package.path, sandbox, progress=progress)
        return [f"{c.what}: {c.detail}" for c in report.checks if not c.ok] or (
            [] if report.ok else ["validation ran no check"])

    return run


def _latest_version_ids():  # noqa: ANN202
    return (select(ProblemVersion.problem_id, func.max(ProblemVersion.number).label("n"))
            .group_by(ProblemVersion.problem_id).subquery())


def store(ctx: Context, path: Path | str, *, mode: str, validator: Validator | None) -> VersionView:
    """mode "add": the slug must be new; "update": it must exist (an unchanged package adds
    nothing); "ensure": add when missing, else leave alone. The validator runs on the stored
    copy before anything is written."""
    packed = pack(path)
    try:
        package = packed.package
        slug = package.slug
        with ctx.db.transaction() as s:
            problem = s.scalar(select(Problem).where(Problem.slug == slug))
            latest = None
            if problem is not None:
                latest = s.scalar(select(ProblemVersion).where(
                    ProblemVersion.problem_id == problem.id)
                    .order_by(ProblemVersion.number.desc()).limit(1))
        if mode == "add" and problem is not None:
            raise Conflict(f"problem {slug!r} exists: use `tensorjudge problems update`")
        if mode == "update" and problem is None:
            raise NotFound(f"no problem {slug!r}: use `tensorjudge problems add`")
        if latest is not None and (mode == "ensure" or latest.content_hash == packed.content_hash):
            return VersionView(slug, latest.number, latest.content_hash, latest.title, False)
        if validator is not None:
            failures = validator(package)
            if failures:
                raise PackageRejected(f"{slug} failed validation", failures)
        with ctx.db.transaction() as s:
            problem = s.scalar(select(Problem).where(Problem.slug == slug))
            if problem is None:
                problem = Problem(slug=slug)
                s.add(problem)
                s.flush()
            number = (s.scalar(select(func.max(ProblemVersion.number))
                               .where(ProblemVersion.problem_id == problem.id)) or 0) + 1
            m = package.manifest
            version = ProblemVersion(
                problem_id=problem.id, number=number, content_hash=packed.content_hash,
                title=m.title, difficulty=m.difficulty, entry_point=m.entry_point,
                signature=m.signature, manifest=m.model_dump(mode="json"),
                statement=package.statement, starter=package.starter, archive=packed.archive)
            s.add(version)
            s.flush()
            for i, t in enumerate(m.tests):
                s.add(ProblemTest(version_id=version.id, position=i, name=t.name, kind=t.kind,
                                  seed=t.seed, params=dict(t.params),
                                  description=t.description))
        # Warm the local cache: this machine will likely judge it.
        materialise(ctx.settings.package_cache_dir, packed.content_hash, slug,
                    lambda: packed.archive)
        log.info("problem stored", extra={"slug": slug, "version": number})
        return VersionView(slug, number, packed.content_hash, m.title, True)
    finally:
        packed.cleanup()


def sync_bundled(ctx: Context, root: Path | None = None) -> list[VersionView]:
    """Add the bundled packages that the database does not have yet (not validated: the
    project's own tests validate them). Broken ones are skipped with a warning."""
    root = root or ctx.settings.problems_dir
    if not root.is_dir():
        return []
    with ctx.db.transaction() as s:
        have = set(s.scalars(select(Problem.slug)))
    added = []
    for path in discover(root):
        if path.name in have:
            continue
        try:
            v = store(ctx, path, mode="ensure", validator=None)
        except (PackageRejected, Conflict) as e:
            log.warning("bundled problem skipped", extra={"path": str(path), "error": str(e)})
            continue
        if v.created:
            added.append(v)
    return added


# --- reading -----------------------------------------------------------------------------


def _summary_row(p: Problem, v: ProblemVersion) -> dict[str, Any]:
    m = v.manifest
    return {
        "slug": p.slug,
        "title": v.title,
        "difficulty": v.difficulty,
        "entry_point": v.entry_point,
        "signature": v.signature,
        "tags": m.get("tags", []),
        "frameworks": m.get("frameworks", []),
        "version": v.number,
    }


def list_problems(ctx: Context) -> list[dict[str, Any]]:
    latest = _latest_version_ids()
    with ctx.db.transaction() as s:
        rows = s.execute(
            select(Problem, ProblemVersion)
            .join(latest, latest.c.problem_id == Problem.id)
            .join(ProblemVersion, (ProblemVersion.problem_id == Problem.id)
                  & (ProblemVersion.number == latest.c.n))
            .order_by(Problem.slug)
        ).all()
        return [_summary_row(p, v) for p, v in rows]


def current_packages(ctx: Context) -> list[Package]:
    """The current version of every problem, loaded (for workers preparing sandboxes)."""
    latest = _latest_version_ids()
    with ctx.db.transaction() as s:
        ids = s.scalars(
            select(ProblemVersion.id)
            .join(latest, (latest.c.problem_id == ProblemVersion.problem_id)
                  & (latest.c.n == ProblemVersion.number))
        ).all()
    return [load_version(ctx, vid) for vid in ids]


def require_slug(slug: str) -> None:
    """NotFound for a name no problem can have (it may hold anything a request can carry:
    NUL, which PostgreSQL text cannot, or lone surrogates), before it reaches the database."""
    if not isinstance(slug, str) or len(slug) > 64 or not SLUG_RE.match(slug):
        raise NotFound(f"no problem {slug!r}")


def current_version_id(ctx: Context, slug: str) -> int:
    require_slug(slug)
    with ctx.db.transaction() as s:
        vid = s.scalar(select(ProblemVersion.id).join(Problem)
                       .where(Problem.slug == slug)
                       .order_by(ProblemVersion.number.desc()).limit(1))
    if vid is None:
        raise NotFound(f"no problem {slug!r}")
    return vid


def get_problem(ctx: Context, slug: str, *, samples: bool = True) -> dict[str, Any]:
    vid = current_version_id(ctx, slug)
    with ctx.db.transaction() as s:
        v = s.get(ProblemVersion, vid)
        assert v is not None
        problem = s.get(Problem, v.problem_id)
        assert problem is not None
        out = _summary_row(problem, v)
        m = v.manifest
        out.update({
            "statement": v.statement,
            "starter": v.starter,
            "tolerance": m.get("tolerance", {}),
            "limits": m.get("limits", {}),
            "content_hash": v.content_hash,
            "updated_at": v.created_at.isoformat(),
        })
        cached = v.samples
    if samples:
        out["samples"] = cached if cached is not None else version_samples(ctx, vid)
    return out


def ready_samples(ctx: Context, slug: str) -> list[dict[str, Any]] | None:
    """The current version's samples if they were computed already, else None (the pages
    then fetch them separately instead of waiting for the reference to run)."""
    vid = current_version_id(ctx, slug)
    with ctx.db.transaction() as s:
        return s.scalar(select(ProblemVersion.samples).where(ProblemVersion.id == vid))


def test_names(ctx: Context, slug: str, version: int | None = None, *,
               samples_only: bool = False) -> list[str]:
    """The names of a version's tests in order (the current version by default)."""
    require_slug(slug)
    with ctx.db.transaction() as s:
        q = (select(ProblemTest.name).join(ProblemVersion,
                                           ProblemVersion.id == ProblemTest.version_id)
             .join(Problem, Problem.id == ProblemVersion.problem_id)
             .where(Problem.slug == slug))
        if version is None:
            q = q.where(ProblemVersion.id == current_version_id(ctx, slug))
        else:
            q = q.where(ProblemVersion.number == version)
        if samples_only:
            q = q.where(ProblemTest.kind == "sample")
        return list(s.scalars(q.order_by(ProblemTest.position)))


def reference_source(ctx: Context, slug: str) -> str:
    """The source of the current version's reference solution."""
    return load_version(ctx, current_version_id(ctx, slug)).reference_source


_samples_locks: dict[int, threading.Lock] = {}
_samples_guard = threading.Lock()


def version_samples(ctx: Context, version_id: int) -> list[dict[str, Any]]:
    """The samples shown on a problem's page, computed once per version (it runs the
    reference) and kept in the database."""
    with _samples_guard:
        lock = _samples_locks.setdefault(version_id, threading.Lock())
    with lock:
        with ctx.db.transaction() as s:
            cached = s.scalar(select(ProblemVersion.samples)
                              .where(ProblemVersion.id == version_id))
        if cached is not None:
            return cached
        from judge.engine import prepare

        package = load_version(ctx, version_id)
        prepared = prepare(package, samples_only=True)
        samples = [
            {
                "name": t.name,
                "description": t.description,
                "inputs": {k: summarise(v) for k, v in args.items()},
                "expected": {"shape": list(shape), **_values(expected)},
            }
            for t, args, shape, expected in zip(prepared.tests, prepared.args, prepared.shapes,
                                                prepared.expected, strict=True)
        ]
        with ctx.db.transaction() as s:
            v = s.get(ProblemVersion, version_id)
            assert v is not None
            v.samples = samples
        return samples


def _num(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.6g}") if np.isfinite(x) else str(x)
    return x


def _values(a: np.ndarray) -> dict[str, Any]:
    flat = np.asarray(a).reshape(-1)
    return {"size": int(flat.size), "values": [_num(x) for x in flat[:SAMPLE_VALUES].tolist()]}


def summarise(value: Any) -> Any:
    """An input as shown to users: arrays by shape, dtype and their first values."""
    if isinstance(value, np.ndarray):
        return {"shape": list(value.shape), "dtype": str(value.dtype), **_values(value)}
    if isinstance(value, dict):
        return {str(k): summarise(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return _num(value.item())
    return _num(value)


def warm_samples(ctx: Context) -> None:
    """Compute the missing samples of every current version (serve does it in the
    background at start, so the first visitor of a page does not wait for the reference)."""
    latest = _latest_version_ids()
    with ctx.db.transaction() as s:
        ids = list(s.scalars(
            select(ProblemVersion.id)
            .join(latest, (latest.c.problem_id == ProblemVersion.problem_id)
                  & (latest.c.n == ProblemVersion.number))
            .where(ProblemVersion.samples.is_(None))))
    for vid in ids:
        try:
            version_samples(ctx, vid)
        except Exception as e:  # noqa: BLE001 - a page can still compute them later
            log.warning("samples not computed", extra={"version_id": vid, "error": str(e)})


def export(ctx: Context, slug: str, dest: Path, *, version: int | None = None,
           force: bool = False) -> Path:
    """Write a version (the current one by default) as a self-contained package folder
    `dest/<slug>`."""
    with ctx.db.transaction() as s:
        q = (select(ProblemVersion.archive, ProblemVersion.number).join(Problem)
             .where(Problem.slug == slug))
        q = (q.where(ProblemVersion.number == version) if version is not None
             else q.order_by(ProblemVersion.number.desc()).limit(1))
        row = s.execute(q).first()
    if row is None:
        raise NotFound(f"no problem {slug!r}" + (f" version {version}" if version else ""))
    archive, _number = row
    target = dest / slug
    if target.exists():
        if not force and any(target.iterdir()):
            raise Conflict(f"{target} exists and is not empty (--force replaces it)")
        shutil.rmtree(target)
    dest.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tj-export-", dir=dest))
    try:
        _extract(archive, tmp)
        os.rename(tmp / slug, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def versions(ctx: Context, slug: str) -> list[dict[str, Any]]:
    require_slug(slug)
    with ctx.db.transaction() as s:
        rows = s.execute(
            select(ProblemVersion.number, ProblemVersion.content_hash, ProblemVersion.created_at,
                   func.count(Submission.id))
            .join(Problem, Problem.id == ProblemVersion.problem_id)
            .outerjoin(Submission, Submission.version_id == ProblemVersion.id)
            .where(Problem.slug == slug)
            .group_by(ProblemVersion.id).order_by(ProblemVersion.number)).all()
    if not rows:
        raise NotFound(f"no problem {slug!r}")
    return [{"version": n, "content_hash": h, "created_at": c.isoformat(), "submissions": k}
            for n, h, c, k in rows]

