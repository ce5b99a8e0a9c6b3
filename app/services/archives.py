"""Problem package archives: a package folder packed into a self-contained, deterministic tar.gz
(its manifest pointing at its own `reference.py`), and archives extracted back into folders.

The content hash of an archive names a version everywhere: a worker on any machine
materialises it into a local cache keyed by that hash.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import shutil
import tarfile
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from judge import Package, PackageError, load_package

MAX_ARCHIVE_BYTES = 32 << 20
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


def extract(archive: bytes, dest: Path) -> None:
    """Unpack an archive made by pack() into `dest` (its one folder, `dest/<slug>`)."""
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
        extract(archive, workdir)
        package = load_package(workdir / source.slug)
    except PackageError as e:
        shutil.rmtree(workdir, ignore_errors=True)
        raise PackageRejected(f"the stored copy of {source.slug} does not load",
                              [str(d) for d in e.defects]) from e
    return Packed(archive, package, workdir)


# --- materialising -----------------------------------------------------------------------


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
        extract(data, tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not (folder / "problem.toml").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
