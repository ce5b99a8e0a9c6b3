"""The compilation cache the sandbox image brings: seeded into a new cache volume, once.

`./dev images` runs the judge's own warm-ups of every bundled problem in sandbox containers
with a cache volume of their own (deploy/xla_seed.py: judge-owned code only, never a
submission), and the sandbox image carries what they compiled at SEED_IN_IMAGE. A judge that
opens the docker backend copies it into its cache volume (a container of the sandbox image, the
volume writable, running seed_copy.py) before any sandbox that runs a warm-up starts, and
records the kinds it holds as filled: on a fresh deployment the workers' start-up then fills
nothing, and the first submissions load the warm-ups' executables rather than compile them.

Safe to share as the trusted outputs are: made by the judge's code alone, read-only to every
sandbox, keyed by what was compiled and the library versions. The one thing the keys do not
name is the CPU; seed_copy.py copies nothing on another CPU than the build machine's.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from judge.sandbox import xla_cache
from judge.sandbox.base import XLA_CACHE_IN_SANDBOX
from judge.sandbox.job import Kind

log = logging.getLogger("tensorjudge.sandbox")
SEED_IN_IMAGE = "/opt/tensorjudge/xla-seed"
SEED_COPY_SOURCE = (Path(__file__).with_name("seed_copy.py")).read_text(encoding="utf-8")
SEED_WAIT_S = 300.0  # the longest a warm-up waits for the seed's copy


class Seeding:
    """The copy of the image's seed into a judge's cache volume (`copy`: seed_volume's call;
    None: no volume), in a thread of its own from now. On a new volume it is a second or more
    of the engine's work, which the judge's first sandboxes do not wait for: those that run
    no warm-up (the spare of NumPy submissions, the imports ahead) read nothing of the cache
    before their job, whose own compilations would miss it anyway. A sandbox that runs a
    warm-up, and a fill, `wait`."""

    def __init__(self, copy: Callable[[], list[str]] | None):
        self._kinds: list[str] = []
        self._done = threading.Event()
        if copy is None:
            self._done.set()
        else:
            threading.Thread(target=self._run, args=(copy,), name="tj-seed",
                             daemon=True).start()

    def _run(self, copy: Callable[[], list[str]]) -> None:
        try:
            self._kinds = copy()
        finally:
            self._done.set()

    def wait(self) -> None:
        if not self._done.wait(SEED_WAIT_S):
            log.warning("the image's compilation cache was still being seeded after %.0f s",
                        SEED_WAIT_S)

    def kinds(self) -> list[str]:
        """The keys of the kinds the seed holds, once it is copied ([] for none)."""
        self.wait()
        return self._kinds


@dataclass(frozen=True)
class _Keyed:
    """A kind as the fill record knows it: by its key alone (the seed names kinds by key)."""

    key: str


SEEDED = cast(Kind, _Keyed("image-seed"))  # the record's mark of a volume already seeded


def seed_volume(client: Any, image: Any, volume: str, python: str,
                record: xla_cache.FillRecord, labels: dict[str, str]) -> list[str]:
    """Copy the image's seed into `volume` unless the record says it was (one judge of
    those sharing the record at a time), and add its kinds to the record; the keys of the
    kinds it holds ([] for an image without a seed or a machine it was not made for)."""
    if not _has_seed(image):
        return []
    if record.holds(SEEDED):
        return []
    with record.lock(SEEDED):
        if record.holds(SEEDED):
            return []
        try:
            report = _copy(client, image.id, volume, python, labels)
        except Exception as e:  # noqa: BLE001 - then the judge fills the cache itself
            log.warning("the image's compilation cache was not seeded: %s", e)
            return []
        if report.get("skipped"):
            log.info("the image's compilation cache is not for this machine: %s",
                     report["skipped"])
        kinds = [str(k) for k in report.get("kinds", [])]
        for key in kinds:
            record.add(cast(Kind, _Keyed(key)))
        record.add(SEEDED)
        return kinds


def _has_seed(image: Any) -> bool:
    return (image.labels or {}).get("org.tensorjudge.xla-seed") == SEED_IN_IMAGE


def _copy(client: Any, image_id: str, volume: str, python: str,
          labels: dict[str, str]) -> dict:
    """Run seed_copy.py in a container confined as a sandbox is, the volume writable,
    labelled as the judge's sandboxes are (a judge gone meanwhile has it removed)."""
    out = client.containers.run(
        image_id, [python, "-I", "-S", "-B", "-c", SEED_COPY_SOURCE, SEED_IN_IMAGE,
                   XLA_CACHE_IN_SANDBOX],
        user="65534:65534", network_mode="none", read_only=True, cap_drop=["ALL"],
        security_opt=["no-new-privileges"], mem_limit=256 << 20, pids_limit=32,
        volumes={volume: {"bind": XLA_CACHE_IN_SANDBOX, "mode": "rw"}},
        labels=labels, remove=True, stdout=True, stderr=False)
    text = out.decode() if isinstance(out, bytes) else str(out)
    with contextlib.suppress(ValueError):
        report = json.loads(text.strip().splitlines()[-1])
        if isinstance(report, dict):
            return report
    raise RuntimeError(f"the seed's copy said {text[-300:]!r}")
