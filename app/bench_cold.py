"""The benchmark's cold scenario: a judge on a fresh machine, against a naive one.

A fresh machine is a fresh clone after the README's set-up command: new caches (a temporary
JAX compilation cache, trusted-output cache and database) hold only what `./dev setup` puts
there (`tensorjudge problems prepare --all`, run here first, off the clock, and timed apart).
A `serve` over them is started, and as soon as it answers, the first Submit of each framework
is posted, all within a tenth of a second, in a fixed order. Beside each, the same file runs
over the same tests in a fresh plain Python process (imports and compilation included), the
processes started 2 at a time (as 2 workers would) in the same order from one common start,
in the same run: the naive judge the first verdicts are held against. A fresh start happens
once per machine, and one of it decides little (the figures move by a third from one to the
next): each is repeated (`starts`, from a copy of the same prepared caches each time), and
the medians are held against each other.
"""

from __future__ import annotations

import math
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from app.bench_client import Case, Client, Sample, server
from app.settings import REPO_ROOT

PROBLEMS = REPO_ROOT / "problems"
SOLUTIONS = REPO_ROOT / "bench" / "solutions"


def _acc(problem: str, name: str) -> Path:
    return PROBLEMS / problem / "submissions" / "accepted" / name


# The first Submit of each framework (eager JAX written unlike the warm-up counts as its own).
COLD_CASES = [
    Case("encoder-block", "flax, as the statement", _acc("encoder-block", "compact_class.py")),
    Case("decoder-block", "numpy", _acc("decoder-block", "numpy_einsum.py")),
    Case("decoder-block", "jax, jit", _acc("decoder-block", "jax_jit.py")),
    Case("decoder-block", "jax, eager, other op order", SOLUTIONS / "decoder_block_jax_eager.py"),
    Case("decoder-block", "torch", _acc("decoder-block", "torch_sdpa.py")),
]

# The naive judge: the file imported by a plain interpreter and called on each test's inputs
# (made ahead, outside the clock), each output turned into a NumPy array.
FRESH = r"""
import pickle, sys
import numpy as np
with open(sys.argv[1], "rb") as f:
    tests = pickle.load(f)
path, entry = sys.argv[2], sys.argv[3]
ns = {"__name__": "solution"}
with open(path) as f:
    exec(compile(f.read(), path, "exec"), ns)
for kwargs in tests:
    np.asarray(ns[entry](**kwargs))
"""


@dataclass
class ColdRow:
    """One first Submit: the median of the fresh starts measured (each list holds them all)."""

    case: Case
    judge: Sample | None = None
    fresh_ms: float = math.nan  # the fresh process, from the common start of all of them
    fresh_alone_ms: float = math.nan  # the same process, from its own start
    fresh_ok: bool = False
    docker: Sample | None = None
    judges: list[Sample] = field(default_factory=list)
    fresh: list[float] = field(default_factory=list)
    fresh_alone: list[float] = field(default_factory=list)
    dockers: list[Sample] = field(default_factory=list)

    def settle(self) -> None:
        """Each figure: the median of its starts."""
        self.judge = _median_sample(self.judges) or self.judge
        self.docker = _median_sample(self.dockers) or self.docker
        if self.fresh:
            self.fresh_ms = statistics.median(self.fresh)
            self.fresh_alone_ms = statistics.median(self.fresh_alone)

    def ratio(self, sample: Sample | None) -> float:
        if sample is None or not self.fresh_ms or math.isnan(self.fresh_ms):
            return math.nan
        return sample.wall_ms / self.fresh_ms


@dataclass
class Cold:
    rows: list[ColdRow] = field(default_factory=list)
    docker_note: str = ""
    prepare_s: float = math.nan  # `problems prepare --all` into the new caches (the set-up's)
    starts: int = 1  # fresh starts measured, each figure their median


def _median_sample(samples: list[Sample]) -> Sample | None:
    """The sample of the median time (the lower middle one of an even count)."""
    if not samples:
        return None
    return sorted(samples, key=lambda s: s.wall_ms)[(len(samples) - 1) // 2]


# The first Submits are posted in the table's order, this far apart: at once for a learner,
# but in a known order, the order in which the naive judge starts its fresh processes too
# (posted at the same instant, they would reach the judge in an order of chance, and the two
# judges would not face the same queue).
POST_GAP_S = 0.02


def first_submits(url: str, cases: list[Case]) -> dict[Case, Sample]:
    """Each case's Submit posted in turn, POST_GAP_S apart, each timed from its POST to its
    verdict."""
    client = Client(url)
    start = threading.Barrier(len(cases))

    def one(i: int, case: Case) -> Sample:
        start.wait()
        time.sleep(i * POST_GAP_S)
        return client.judge(case, "submit")

    with ThreadPoolExecutor(len(cases)) as ex:
        futures = {case: ex.submit(one, i, case) for i, case in enumerate(cases)}
        return {case: f.result() for case, f in futures.items()}


def fresh_processes(cases: list[Case], tmp: Path, workers: int = 2
                    ) -> dict[Case, tuple[float, float, bool]]:
    """Per case: ms from the common start to the end of its fresh process, ms of the process
    itself, and whether it ran to its end."""
    from judge import load_package

    jobs: list[tuple[Case, list[str]]] = []
    for i, case in enumerate(cases):
        package = load_package(PROBLEMS / case.problem)
        tests = [package.generator.generate(t.seed, **t.params)
                 for t in package.select(False)]
        inputs = tmp / f"fresh-{i}.pkl"
        inputs.write_bytes(pickle.dumps(tests))
        jobs.append((case, [sys.executable, "-c", FRESH, str(inputs), str(case.path),
                            package.entry_point]))
    t0 = time.perf_counter()

    def run(cmd: list[str]) -> tuple[float, float, bool]:
        t1 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, timeout=900, cwd=tmp,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp),
                                   "JAX_PLATFORMS": "cpu"})
        t2 = time.perf_counter()
        return (t2 - t0) * 1000.0, (t2 - t1) * 1000.0, done.returncode == 0

    with ThreadPoolExecutor(workers) as ex:
        futures = {case: ex.submit(run, cmd) for case, cmd in jobs}
        return {case: f.result() for case, f in futures.items()}


def cold_env(tmp: Path) -> dict[str, str]:
    """Empty caches of its own for a judge server (its database is new anyway)."""
    return {"TENSORJUDGE_CACHE_DIR": str(tmp / "cache"),
            "TENSORJUDGE_COMPILE_CACHE_ROOT": str(tmp / "xla")}


def as_in_app_image(prepared: Path, new: Path) -> None:
    """A new deployment's trusted-output cache: what the app image carries (the bundled
    problems' expected outputs and known mistakes' outputs, computed at its build by
    deploy/trusted_outputs.py), here taken from the caches the set-up prepared. Its
    compilation caches stay new: the sandboxes' is the new volume the sandbox image seeds."""
    shutil.copytree(prepared / "cache" / "expected", new / "cache" / "expected",
                    dirs_exist_ok=True)


def prepare_like_setup(env: dict[str, str]) -> float:
    """What `./dev setup` does for the bundled problems, into the caches `env` names: the
    seconds it took."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "app.cli", "problems", "prepare", "--all"],
                   env={**os.environ, **env}, check=True, capture_output=True, timeout=1800)
    return time.perf_counter() - t0


def _copy_caches(prepared: Path, new: Path) -> None:
    """The prepared caches as they were, for one more fresh start (owners kept: the
    sandboxes' uids read, and the filling uid writes, the compilation cache)."""
    subprocess.run(["cp", "-a", str(prepared), str(new)], check=True, timeout=600)


def _remove_volume(volume: str, timeout_s: float = 60.0) -> None:
    """The engine removes a stopped judge's containers asynchronously; a volume one of them
    still mounts cannot go until it is gone."""
    deadline = time.monotonic() + timeout_s
    while True:
        done = subprocess.run(["docker", "volume", "rm", "-f", volume], capture_output=True,
                              timeout=120)
        if done.returncode == 0 or time.monotonic() > deadline:
            return
        time.sleep(1.0)


def run_cold(tmp: Path, progress: Callable[[str], object], *, docker: bool,
             cases: list[Case] | None = None, starts: int = 3) -> Cold:
    cases = cases or COLD_CASES
    out = Cold([ColdRow(c) for c in cases], starts=starts)
    rows = {r.case: r for r in out.rows}
    prepared = tmp / "cold-caches"
    # As a deployment's cache folders are: reachable by the sandboxes' uids (a temporary
    # folder is closed to them, and its caches would stay empty).
    tmp.chmod(tmp.stat().st_mode | 0o711)
    progress("cold start: new caches, prepared as `./dev setup` does (off the clock)...")
    out.prepare_s = prepare_like_setup(cold_env(prepared))
    progress(f"  prepared in {out.prepare_s:.0f} s; {starts} fresh judges, each from a copy "
             f"of those caches, the first Submit of {len(cases)} frameworks at once:")
    for i in range(starts):
        _copy_caches(prepared, tmp / f"cold-{i}-caches")
        with server(f"cold-{i}", tmp, cold_env(tmp / f"cold-{i}-caches")) as url:
            for case, sample in first_submits(url, cases).items():
                rows[case].judges.append(sample)
                progress(f"  {i + 1}: {case.problem:16} {case.label:28} "
                         f"{sample.wall_ms:9,.0f} ms {sample.verdict}")
    if docker:
        progress("  the same with the docker backend (each a new cache volume, which the "
                 "image seeds as a new deployment's):")
        for i in range(starts):
            volume = f"tensorjudge-bench-cold-{uuid.uuid4().hex[:8]}"
            env = {**cold_env(tmp / f"cold-docker-{i}-caches"), "TENSORJUDGE_SANDBOX": "docker",
                   "TENSORJUDGE_DOCKER_CACHE_VOLUME": volume}
            as_in_app_image(prepared, tmp / f"cold-docker-{i}-caches")
            try:
                with server(f"cold-docker-{i}", tmp, env) as url:
                    for case, sample in first_submits(url, cases).items():
                        rows[case].dockers.append(sample)
                        progress(f"  {i + 1}: {case.problem:16} {case.label:28} "
                                 f"{sample.wall_ms:9,.0f} ms {sample.verdict} (docker)")
            finally:
                _remove_volume(volume)
    progress("  fresh plain processes, 2 at a time from one start:")
    for i in range(starts):
        with tempfile.TemporaryDirectory(prefix="tj-fresh-") as fresh_tmp:
            for case, (ms, alone, ok) in fresh_processes(cases, Path(fresh_tmp)).items():
                row = rows[case]
                row.fresh.append(ms)
                row.fresh_alone.append(alone)
                row.fresh_ok = ok and (row.fresh_ok or i == 0)
                progress(f"  {i + 1}: {case.problem:16} {case.label:28} {ms:9,.0f} ms "
                         f"(alone {alone:,.0f} ms){'' if ok else ' FAILED'}")
    for row in out.rows:
        row.settle()
    return out


def _ms(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:,.0f}"


def _x(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def cold_report(cold: Cold) -> list[str]:
    lines = ["", "## Cold start", "",
             "A fresh judge, as a fresh clone has it after `./dev setup`: new compilation "
             "cache, trusted-output cache and database, holding only what the set-up's "
             "`tensorjudge problems prepare --all` puts there (the warm-ups' compilation "
             f"cache and the expected outputs; it took {cold.prepare_s:.0f} s here, off the "
             "clock); `serve` started and, as soon as it answered, the first Submit of each "
             "framework posted in the table's order, 20 ms apart (2 workers), each timed from its "
             "POST to its verdict. "
             "*Fresh process*: the same file "
             "run over the same tests by a plain Python process (imports and compilation "
             "included), the processes started 2 at a time (as 2 workers) in the same order "
             "from one common start in the same run, timed from that start; *alone*: the "
             "process's own time. "
             "The ratios are the judge's time over the fresh process's. *Docker*: the same "
             "with the docker backend, as a new deployment starts: a new compilation-cache "
             "volume, which the sandbox image seeds, and the trusted outputs the app image "
             "carries. "
             + (f"Each figure is the median of {cold.starts} such starts, each from a copy of "
                f"the same prepared caches (the fresh processes too, {cold.starts} times): one "
                "start decides little (each is listed below)." if cold.starts > 1 else ""), "",
             "| problem | solution | judge ms | fresh process ms | alone ms | judge / fresh "
             "| docker ms | docker / fresh | verdicts |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in cold.rows:
        verdicts = {s.verdict for s in (r.judge, r.docker, *r.judges, *r.dockers)
                    if s is not None}
        if not r.fresh_ok:
            verdicts.add("fresh process failed")
        lines.append(
            f"| {r.case.problem} | {r.case.label} | {_ms(r.judge.wall_ms if r.judge else None)} "
            f"| {_ms(r.fresh_ms)} | {_ms(r.fresh_alone_ms)} | {_x(r.ratio(r.judge))} "
            f"| {_ms(r.docker.wall_ms if r.docker else None)} | {_x(r.ratio(r.docker))} "
            f"| {','.join(sorted(verdicts))} |")
    if cold.docker_note:
        lines += ["", f"No docker column: {cold.docker_note}."]
    if cold.starts > 1:
        lines += ["", "Each start, in order (ms):", "",
                  "| problem | solution | judge | docker | fresh process |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| {r.case.problem} | {r.case.label} "
                  f"| {', '.join(_ms(x.wall_ms) for x in r.judges) or '-'} "
                  f"| {', '.join(_ms(x.wall_ms) for x in r.dockers) or '-'} "
                  f"| {', '.join(_ms(x) for x in r.fresh) or '-'} |" for r in cold.rows]
    return lines


def cold_targets(cold: Cold | None) -> list[tuple[str, str, bool]]:
    """Each framework's first Submit at most a fresh process's time: with bubblewrap, and with
    the docker backend where it was measured."""
    if cold is None:
        return []
    out = []
    for name, pick in (("", lambda r: r.judge), (" (docker)", lambda r: r.docker)):
        ratios = [(r.ratio(pick(r)), r) for r in cold.rows if not math.isnan(r.ratio(pick(r)))]
        if not ratios:
            continue
        worst, row = max(ratios, key=lambda x: x[0])
        out.append((f"Cold start{name}: each framework's first Submit at most a fresh "
                    "process's time",
                    f"{worst:.2f}x at most ({row.case.problem}, {row.case.label})", worst <= 1.0))
    return out
