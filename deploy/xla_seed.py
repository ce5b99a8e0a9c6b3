"""The sandbox image's seed of the JAX compilation cache (`scripts/images` runs this with the
judge's own environment, after building the image's `sandbox-runtime` stage).

    python deploy/xla_seed.py OUT IMAGE

Every bundled problem's warm-ups (judge-owned code: never a submission) run in sandbox
containers of IMAGE, exactly as a worker's start-up fills its cache volume, but into a volume
of their own; OUT/cache then holds what they compiled and OUT/seed.json the kinds it holds and
the CPU it was compiled on. The image copies OUT to /opt/tensorjudge/xla-seed and a judge
seeds a new cache volume with it (judge/sandbox/container/seed.py). OUT is kept between
builds: when the kinds, the library versions and the CPU are the same, nothing is compiled.
"""

from __future__ import annotations

import io
import json
import os
import runpy
import secrets
import shutil
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def main(out: Path, image: str) -> None:
    sys.path.insert(0, str(REPO))
    from importlib import metadata

    from judge.kinds import kinds_for
    from judge.package import discover, load_package
    from judge.sandbox import xla_cache
    from judge.sandbox.base import XLA_CACHE_IN_SANDBOX, sandbox_env
    from judge.sandbox.container import ContainerConfig, ContainerSandbox
    from judge.trusted.expected import library_versions

    t0 = time.monotonic()
    wanted: dict[str, tuple[Any, int]] = {}
    for path in discover(REPO / "problems"):
        package = load_package(path)
        for kind in kinds_for(package):
            if xla_cache.needs_fill(kind):
                wanted[kind.key] = (kind, package.manifest.limits.memory_mb << 20)
    copier = runpy.run_path(str(REPO / "judge/sandbox/container/seed_copy.py"))
    manifest = {
        "kinds": sorted(wanted),
        "cpu": copier["fingerprint"](Path("/proc/cpuinfo").read_text()),
        "jaxlib": metadata.version("jaxlib"),
        # The warm-ups' computations depend on the other libraries too (Flax's, say).
        "libraries": dict(library_versions()),
        "xla_flags": sandbox_env()["XLA_FLAGS"],
    }
    done = out / "seed.json"
    if done.exists() and json.loads(done.read_text()) == manifest and (out / "cache").is_dir():
        print("[images] the compilation cache's seed is up to date", file=sys.stderr)
        return
    shutil.rmtree(out, ignore_errors=True)
    (out / "cache").mkdir(parents=True)
    volume = f"tensorjudge-xla-seed-{secrets.token_hex(4)}"
    backend = ContainerSandbox(ContainerConfig(image=image, cache_volume=volume))
    try:
        for key, (kind, memory) in wanted.items():
            if not backend.fill_compile_cache(kind, memory):
                raise SystemExit(f"the warm-up of kind {key} failed: no seed")
        _export(backend.api, image, volume, XLA_CACHE_IN_SANDBOX, out / "cache")
    finally:
        backend.close()
        try:
            backend.api.remove_volume(volume, force=True)
        except Exception as e:  # noqa: BLE001 - a leftover volume is only disk
            print(f"[images] volume {volume} not removed: {e}", file=sys.stderr)
    # Written last: a build interrupted before this is done again next time.
    done.write_text(json.dumps(manifest, indent=1) + "\n")
    files = sum(len(f) for _, _, f in os.walk(out / "cache"))
    print(f"[images] compilation cache's seed: {len(wanted)} kinds, {files} files, "
          f"{time.monotonic() - t0:.0f} s", file=sys.stderr)


def _export(api: Any, image: str, volume: str, where: str, into: Path) -> None:
    """The volume's files, through a container that is never started."""
    cid = api.create_container(image, command=["true"], volumes=[where],
                               host_config=api.create_host_config(
                                   binds={volume: {"bind": where, "mode": "ro"}}))["Id"]
    try:
        stream, _ = api.get_archive(cid, where)  # entries under its last name
        data = io.BytesIO(b"".join(stream))
    finally:
        api.remove_container(cid, force=True)
    with tarfile.open(fileobj=data) as tar:
        for member in tar.getmembers():
            if not (member.isfile() or member.isdir()):
                continue  # only plain files and folders are the cache's
            parts = Path(member.name).parts[1:]
            if not parts or ".." in parts or member.name.startswith("/"):
                continue
            name = Path(*parts)
            target = into / name
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            if src is not None:
                target.write_bytes(src.read())


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve(), sys.argv[2])
