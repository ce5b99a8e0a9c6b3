"""The problem catalogue: problems and their versions in the database.

A version is stored whole, as its package's self-contained archive (app.services.archives), so a
worker on any machine can load it from a local cache keyed by the archive's content hash.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Subquery, func, select

from app.context import Context
from app.db.models import Problem, ProblemTest, ProblemVersion, Submission
from app.services.archives import PackageRejected, extract, materialise, pack
from app.services.errors import Conflict, NotFound
from judge import SLUG_RE, Package, discover, load_package

log = logging.getLogger("tensorjudge.problems")

# --- loading -----------------------------------------------------------------------------

_pkg_lock = threading.Lock()
_pkg_cache: OrderedDict[str, Package] = OrderedDict()
_PKG_CACHE_SIZE = 32


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
    """Runs the reference and every packaged submission (judge.validate_package) in a fresh
    sandbox per judgement."""

    def run(package: Package) -> list[str]:
        from judge import open_sandbox, validate_package

        sandbox = open_sandbox(ctx.settings.sandbox_config())
        report = validate_package(package.path, sandbox, progress=progress)
        return [f"{c.what}: {c.detail}" for c in report.checks if not c.ok] or (
            [] if report.ok else ["validation ran no check"])

    return run


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
                signature=m.signature, manifest=_manifest(package),
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


def _manifest(package: Package) -> dict[str, Any]:
    """The manifest as a version keeps it, its limits as the judge applies them: calibrated
    where the manifest leaves them open, each with how it was set (`basis`)."""
    manifest = package.manifest.model_dump(mode="json")
    manifest["limits"] = {**manifest["limits"], **package.limits.as_dict()}
    return manifest


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


def latest_version_numbers() -> Subquery:
    """Each problem's id and the number `n` of its current (highest) version."""
    return (select(ProblemVersion.problem_id, func.max(ProblemVersion.number).label("n"))
            .group_by(ProblemVersion.problem_id).subquery())


def list_problems(ctx: Context) -> list[dict[str, Any]]:
    latest = latest_version_numbers()
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
    latest = latest_version_numbers()
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


def get_problem(ctx: Context, slug: str) -> dict[str, Any]:
    """The current version of a problem (without its samples: app.services.samples)."""
    return problem_at_version(ctx, current_version_id(ctx, slug))


def problem_at_version(ctx: Context, version_id: int) -> dict[str, Any]:
    """A problem as one of its versions has it: statement, starter, limits, tolerance."""
    with ctx.db.transaction() as s:
        v = s.get(ProblemVersion, version_id)
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
    return out


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
        extract(archive, tmp)
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

