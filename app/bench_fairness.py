"""`tensorjudge fairness`: verdicts only the code decides. Every packaged accepted submission of
the chosen problems is judged alone and under load (a busy process on every core, and another
judgement running beside it), round after round; each round judges it once alone and once
loaded, so a machine that drifts faster or slower through the run moves both. It must be
accepted every time, and charged the same: the CPU its tests were charged and the JAX
compilation charged to its budget, the loaded rounds' median within `SLACK` of the alone
rounds' (or within `FLOOR_MS`, for charges of a few milliseconds, which the clocks' resolution
moves by more than a tenth)."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

SLACK = 0.10
FLOOR_MS = 50.0
SPIN = "while True:\n    pass\n"


@dataclass
class Case:
    slug: str
    label: str
    code: str


@dataclass
class Sample:
    verdict: str
    cpu_ms: float  # charged to the tests: CPU less compilation
    compile_ms: float  # charged to the compile budget


@dataclass
class Row:
    case: Case
    alone: list[Sample] = field(default_factory=list)
    loaded: list[Sample] = field(default_factory=list)

    def median(self, which: str, figure: str) -> float:
        return statistics.median(getattr(s, figure) for s in getattr(self, which))

    def close(self, figure: str) -> bool:
        a, b = self.median("alone", figure), self.median("loaded", figure)
        return abs(b - a) <= max(SLACK * a, FLOOR_MS)

    @property
    def ok(self) -> bool:
        every = self.alone + self.loaded
        return (all(s.verdict == "AC" for s in every) and self.close("cpu_ms")
                and self.close("compile_ms"))


def sample(result) -> Sample:  # noqa: ANN001 - a judge.JudgeResult
    cpu = compile_ms = 0.0
    for t in result.tests:
        used = t.cpu_ms if t.cpu_ms is not None else (t.time_ms or 0.0)
        compiled = min(max(t.compile_ms or 0.0, 0.0), used)
        cpu += used - compiled
        compile_ms += compiled
    return Sample(result.verdict.value, cpu, compile_ms)


def cases(root: Path, slugs: list[str]) -> list[Case]:
    out = []
    for slug in slugs:
        for f in sorted((root / slug / "submissions" / "accepted").glob("*.py")):
            out.append(Case(slug, f"accepted/{f.name}", f.read_text(encoding="utf-8")))
    return out


@contextlib.contextmanager
def load(beside: Callable[[], object]) -> Iterator[None]:
    """A spinning process per core, and `beside` judged again and again on a thread, until
    the block ends."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN])
                for _ in range(os.cpu_count() or 1)]
    stop = threading.Event()

    def again() -> None:
        while not stop.is_set():
            beside()

    thread = threading.Thread(target=again, name="fairness-beside", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        for p in spinners:
            p.send_signal(signal.SIGKILL)
            p.wait()
        thread.join()


def run(root: Path, slugs: list[str], rounds: int, sandbox,  # noqa: ANN001 - a judge pool
        progress: Callable[[str], None]) -> list[Row]:
    from judge import judge, load_package

    packages = {slug: load_package(root / slug) for slug in slugs}
    rows = [Row(c) for c in cases(root, slugs)]
    # Beside: the costliest way of writing JAX, on another problem than the one judged.
    heavy = [c for c in cases(root, list(packages)) if "per_call" in c.label] or \
        [r.case for r in rows]

    def judged(c: Case) -> Sample:
        return sample(judge(packages[c.slug], c.code, sandbox, split=False, probes=False))

    for r in range(rounds):
        for row in rows:
            c = row.case
            other = next((h for h in heavy if h.slug != c.slug), heavy[0])
            row.alone.append(judged(c))
            with load(partial(judged, other)):
                row.loaded.append(judged(c))
            a, b = row.alone[-1], row.loaded[-1]
            progress(f"round {r + 1}/{rounds} {c.slug} {c.label}: alone {a.verdict} "
                     f"{a.cpu_ms:.0f}+{a.compile_ms:.0f} ms, loaded {b.verdict} "
                     f"{b.cpu_ms:.0f}+{b.compile_ms:.0f} ms")
    return rows


def report(rows: list[Row], rounds: int) -> str:
    lines = [f"Each accepted submission judged {rounds} times alone and {rounds} times loaded "
             f"(a busy process on each of {os.cpu_count()} cores and a per-call jitting "
             "submission judged beside it). Charges are medians, in ms: CPU charged to the "
             "tests / JAX compilation charged to the budget; a loaded median must be within "
             f"{SLACK:.0%} of the alone one (or {FLOOR_MS:.0f} ms).", "",
             "| problem | submission | verdicts alone | verdicts loaded | CPU alone | CPU "
             "loaded | compile alone | compile loaded | same |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        def verdicts(samples: list[Sample]) -> str:
            seen = [s.verdict for s in samples]
            return ", ".join(f"{v} x{seen.count(v)}" for v in sorted(set(seen)))

        lines.append(
            f"| {row.case.slug} | {row.case.label} | {verdicts(row.alone)} | "
            f"{verdicts(row.loaded)} | {row.median('alone', 'cpu_ms'):.0f} | "
            f"{row.median('loaded', 'cpu_ms'):.0f} | {row.median('alone', 'compile_ms'):.0f} | "
            f"{row.median('loaded', 'compile_ms'):.0f} | {'yes' if row.ok else 'NO'} |")
    return "\n".join(lines) + "\n"
