"""`tensorjudge bench`: time from POST to final verdict, through the real service.

Servers are measured in one run, each a real `tensorjudge serve` with 2 embedded workers on its
own SQLite database: the judge as configured (a pool of prepared sandboxes, the judge-filled
compilation cache) idle and under load (a burst, and a sustained stream of submissions from
several users), a naive judge as the baseline (a fresh sandbox per submission, no pool, no
cache), and the judge with the docker backend. First, a cold start (app/bench_cold.py): a judge
with empty caches and its first Submit of each framework, against fresh plain processes.
Figures are printed as a table, with ratios, and written to a Markdown file.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.bench_client import Case, Client, Sample, Series, server
from app.bench_cold import COLD_CASES, Cold, cold_report, cold_targets, run_cold
from app.bench_load import Sustained, burst, machine_cpu_seconds, machine_speed, sustained
from app.settings import REPO_ROOT

__all__ = ["CASES", "STATEMENT", "Sample", "Series", "machine_cpu_seconds", "report",
           "run_bench", "targets"]

SOLUTIONS = REPO_ROOT / "bench" / "solutions"
PROBLEMS = REPO_ROOT / "problems"


def _acc(problem: str, name: str) -> Path:
    return PROBLEMS / problem / "submissions" / "accepted" / name


STATEMENT = "flax, as the statement"
CASES = [
    Case("encoder-block", STATEMENT, _acc("encoder-block", "compact_class.py")),
    Case("encoder-block", "flax, setup() style",
         _acc("encoder-block", "setup_named_attributes.py")),
    Case("encoder-block", "flax under jax.jit", _acc("encoder-block", "jit_per_shape.py")),
    Case("decoder-block-preln", STATEMENT, _acc("decoder-block-preln", "compact_class.py")),
    Case("decoder-block-preln", "flax, setup() style",
         _acc("decoder-block-preln", "setup_named_attributes.py")),
    Case("decoder-block-preln", "flax under jax.jit",
         _acc("decoder-block-preln", "jit_per_shape.py")),
    Case("decoder-block", "numpy", _acc("decoder-block", "numpy_einsum.py")),
    Case("decoder-block", "jax, jit", _acc("decoder-block", "jax_jit.py")),
    Case("decoder-block", "jax, eager, other op order", SOLUTIONS / "decoder_block_jax_eager.py"),
    Case("decoder-block", "jax, eager, one head at a time",
         SOLUTIONS / "decoder_block_jax_eager_heads.py"),
    Case("decoder-block", "torch", _acc("decoder-block", "torch_sdpa.py")),
    Case("encoder-decoder", "numpy", _acc("encoder-decoder", "numpy_per_head.py")),
    Case("encoder-decoder", "jax, jit (scan)", _acc("encoder-decoder", "jax_jit.py")),
    Case("encoder-decoder", "jax, eager, other op order",
         SOLUTIONS / "encoder_decoder_jax_eager.py"),
    Case("encoder-decoder", "jax, eager, one head at a time",
         SOLUTIONS / "encoder_decoder_jax_eager_heads.py"),
    Case("encoder-decoder", "torch", _acc("encoder-decoder", "torch_sdpa.py")),
]
# Wrong answers not among the packaged ones: what a wrong Submit costs, diagnosis included.
WRONG_CASES = [
    Case("encoder-block", "wrong: Post-LN, setup() style",
         SOLUTIONS / "wrong" / "encoder_block_post_ln.py"),
    Case("decoder-block", "wrong: torch, no causal mask",
         SOLUTIONS / "wrong" / "decoder_block_torch_no_causal.py"),
]


def measure(client: Client, cases: list[Case], runs: int, *, settle: bool,
            progress: Any) -> dict[tuple[str, str, str], Series]:
    out: dict[tuple[str, str, str], Series] = {}
    for case in cases:
        for mode in ("run", "submit"):
            client.judge(case, mode)  # untimed: expected outputs cached, caches filled
            series = out.setdefault((case.problem, case.label, mode), Series())
            for _ in range(runs):
                if settle:
                    client.settle()
                series.samples.append(client.judge(case, mode))
            progress(f"  {case.problem:20} {case.label:28} {mode:6} "
                     f"p50 {series.pct('wall_ms', 0.5):8.0f} ms")
    return out


def _fmt(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:,.0f}"


EAGER = "jax, eager, other op order"


def targets(fast: dict, naive: dict, burst_rate: float, burst_cpu_per_sub: float | None = None,
            load: Sustained | None = None, cold: Cold | None = None) -> list[str]:
    """The targets, each against its figure from this same run (rows the run did not measure
    are left out)."""
    rows: list[tuple[str, str, bool]] = []

    def p50(key: tuple[str, str, str], series: dict) -> float | None:
        s = series.get(key)
        return s.pct("wall_ms", 0.5) if s is not None and s.samples else None

    if (t := p50(("encoder-block", STATEMENT, "run"), fast)) is not None:
        rows.append(("Idle: Run, Flax encoder block: p50 at most 100 ms", f"{t:,.0f} ms",
                     t <= 100))
    for problem in ("encoder-block", "decoder-block-preln"):
        key = (problem, STATEMENT, "submit")
        if (t := p50(key, fast)) is None:
            continue
        rows.append((f"Idle: Submit, {problem} (Flax): p50 at most 400 ms", f"{t:,.0f} ms",
                     t <= 400))
        if (b := p50(key, naive)) is not None:
            rows.append((f"Submit, {problem} (Flax): at least 15x the naive judge",
                         f"{b / t:.1f}x", b / t >= 15))
    for problem in ("decoder-block", "encoder-decoder"):
        for label in sorted(k[1] for k in fast if k[0] == problem and k[2] == "submit"
                            and k[1].startswith("jax, eager")):
            if (t := p50((problem, label, "submit"), fast)) is not None:
                rows.append((f"Idle: Submit, {problem} ({label}): p50 at most 1.5 s",
                             f"{t:,.0f} ms", t <= 1500))
        for fw, name in (("numpy", "NumPy"), ("torch", "PyTorch")):
            if (t := p50((problem, fw, "submit"), fast)) is not None:
                rows.append((f"Idle: Submit, {problem} ({name}): p50 under 100 ms",
                             f"{t:,.0f} ms", t < 100))
    if fast:
        worst = max(fast, key=lambda k: fast[k].pct("overhead_ms", 0.5))
        t = fast[worst].pct("overhead_ms", 0.5)
        rows.append(("Judge overhead: p50 at most 100 ms on every row",
                     f"{t:,.0f} ms at most ({worst[0]}, {worst[1]}, {worst[2]})", t <= 100))
    if not math.isnan(burst_rate):
        rows.append(("Burst of Flax Submits, 2 workers: at least 3 per second",
                     f"{burst_rate:.2f}/s", burst_rate >= 3))
    if burst_cpu_per_sub is not None:
        rows.append(("Judge CPU per Flax Submit during the burst: at most 0.6 s",
                     f"{burst_cpu_per_sub:.2f} s", burst_cpu_per_sub <= 0.6))
    if load is not None and load.all.samples:
        t = load.all.pct("wall_ms", 0.9)
        rows.append((f"Sustained {load.rate:g} Flax submission/s (half Run, half Submit): "
                     "p90 at most 1 s", f"{t:,.0f} ms", t <= 1000))
    rows += cold_targets(cold)
    if not rows:
        return []
    out = ["", "## Targets", "", "| target | this run | met |", "| --- | ---: | --- |"]
    out += [f"| {what} | {figure} | {'yes' if ok else '**no**'} |" for what, figure, ok in rows]
    return out


def load_report(load: Sustained, idle: dict) -> list[str]:
    """The sustained stream's latencies beside the same rows measured at an idle judge."""
    n = len(load.all.samples)
    lines = ["", "## Sustained load", "",
             f"Submissions arriving at random (a Poisson process) at {load.rate:g} per second "
             f"for {load.seconds:.0f} s from several users, each a Run or a Submit (even odds) "
             f"of one of the Flax problems as the statement describes: {n} submissions, POST "
             "to verdict. *Idle* is the same row measured above, one submission at a time "
             "with the pool settled."]
    if load.cpu_s is not None and n:
        lines[-1] += (f" Machine CPU meanwhile: {load.cpu_s / n:.2f} s per submission "
                      f"({load.cpu_s / load.seconds:.2f} cores busy on average).")
    if load.late_s > 0.5:
        lines[-1] += f" The clients posted up to {load.late_s:.1f} s late."
    lines += ["", "| problem | mode | submissions | loaded p50 ms | loaded p90 ms | idle p50 ms "
              "| idle p90 ms | verdicts |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for key, s in load.samples.items():
        i = idle.get(key)
        lines.append(f"| {key[0]} | {key[2]} | {len(s.samples)} | {_fmt(s.pct('wall_ms', 0.5))} "
                     f"| {_fmt(s.pct('wall_ms', 0.9))} "
                     f"| {_fmt(i.pct('wall_ms', 0.5) if i else float('nan'))} "
                     f"| {_fmt(i.pct('wall_ms', 0.9) if i else float('nan'))} "
                     f"| {','.join(sorted(s.verdicts))} |")
    a = load.all
    lines.append(f"| all | | {n} | {_fmt(a.pct('wall_ms', 0.5))} | {_fmt(a.pct('wall_ms', 0.9))} "
                 f"| | | {','.join(sorted(a.verdicts))} |")
    return lines


def _speed_lines(speed: list[dict[str, float] | None] | None) -> list[str]:
    """The machine's speed at the start and end of the run (bench_load.machine_speed)."""
    taken = [s for s in speed or [] if s]
    if not taken:
        return []
    py = " and ".join(f"{s['python_ms']:.0f}" for s in taken)
    np_ = " and ".join(f"{s['numpy_ms']:.0f}" for s in taken)
    return ["", f"This machine during the run (a fixed workload in a plain process, at the start "
            f"and at the end; lower is faster): pure Python {py} ms, NumPy {np_} ms. The same "
            "machine runs the same code up to about twice as fast or slow from hour to hour; "
            "read the absolute figures of two runs against these, and the ratios to the naive "
            "judge, measured in the same run, as they are."]


def report(fast: dict, naive: dict, burst_s: float, burst_n: int, burst_cpu_s: float | None,
           pool: dict | None, runs: int, baseline_runs: int,
           docker: dict | None = None, wrong: dict | None = None,
           load: Sustained | None = None,
           speed: list[dict[str, float] | None] | None = None,
           cold: Cold | None = None, wrong_docker: dict | None = None) -> str:
    lines = [
        "# tensorjudge benchmark",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
        f"{os.cpu_count()} cores with `tensorjudge bench`. Each row: {runs} submissions "
        f"(baseline: {baseline_runs}), one at a time, time from POST to final verdict through "
        "the REST API of a real `serve` with 2 embedded workers. *Overhead* is that time minus "
        "the time spent inside the user's function (measured in the sandbox); *compile* is the "
        "JAX compilation inside the user's function that the warm-up could not foresee. "
        "A submission that does not compile its own code runs in two prepared sandboxes at "
        "once when the worker is idle and it has enough tests (the result's `parts`); its "
        "overhead subtracts the user's time of the longer part.",
        *_speed_lines(speed),
        "",
        "| problem | solution | mode | p50 ms | p90 ms | overhead p50 | compile p50 | naive p50 "
        "| naive p90 | speed-up (p50) | docker p50 | docker p90 | docker / bwrap (p50) "
        "| verdicts |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | --- |",
    ]
    for key, s in fast.items():
        b = naive.get(key)
        bp50 = b.pct("wall_ms", 0.5) if b else float("nan")
        ratio = bp50 / s.pct("wall_ms", 0.5) if b else float("nan")
        d = (docker or {}).get(key)
        dp50 = d.pct("wall_ms", 0.5) if d else float("nan")
        dratio = dp50 / s.pct("wall_ms", 0.5) if d else float("nan")
        verdicts = ",".join(sorted(s.verdicts | (b.verdicts if b else set())
                                   | (d.verdicts if d else set())))
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {_fmt(s.pct('wall_ms', 0.5))} | "
            f"{_fmt(s.pct('wall_ms', 0.9))} | {_fmt(s.pct('overhead_ms', 0.5))} | "
            f"{_fmt(s.pct('compile_ms', 0.5))} | {_fmt(bp50)} | "
            f"{_fmt(b.pct('wall_ms', 0.9) if b else float('nan'))} | "
            f"{'-' if math.isnan(ratio) else f'{ratio:.1f}x'} | {_fmt(dp50)} | "
            f"{_fmt(d.pct('wall_ms', 0.9) if d else float('nan'))} | "
            f"{'-' if math.isnan(dratio) else f'{dratio:.2f}'} | {verdicts} |")
    if docker is not None:
        lines += ["", "*docker*: the same judge with `TENSORJUDGE_SANDBOX=docker` (a prepared "
                  "container per submission from the pool, the compilation cache in an engine "
                  "volume), measured in the same run; the ratio is its p50 over bubblewrap's."]
    rate = burst_n / burst_s if burst_s else float("nan")
    lines += targets(fast, naive, rate, burst_cpu_s / burst_n if burst_cpu_s else None, load,
                     cold)
    if cold is not None:
        lines += cold_report(cold)
    lines += ["", "## Burst", "",
              f"{burst_n} Submit (all tests) submissions of the Flax encoder block posted at once "
              f"from 10 clients, 2 workers: drained in {burst_s:.1f} s, "
              f"**{rate:.2f} submissions/s**."]
    if burst_cpu_s:
        cores = os.cpu_count() or 1
        lines += ["", f"Machine CPU while it drained, less the benchmark's own clients: "
                  f"{burst_cpu_s / burst_n:.2f} s per submission (server, workers, sandboxes "
                  f"being prepared and judging). At that cost {cores} cores drain at most "
                  f"{cores * burst_n / burst_cpu_s:.2f} submissions/s."]
    if load is not None:
        lines += load_report(load, fast)
    if pool:
        lines += ["", "## Pool", "",
                  f"Idle prepared sandboxes after the run: {pool['idle']}, "
                  f"**{pool['idle_memory_mb']} MiB** in all (cgroup memory). "
                  f"Jobs that found one ready: {pool['hits']}, waited for one: {pool['waits']}, "
                  f"started their own: {pool['cold']}."]
        if pool.get("prepared_after_s") is not None:
            lines += ["", f"The workers' start-up work (compilation caches filled, trusted "
                      f"outputs and known mistakes of every problem computed, each kind of "
                      f"sandbox declared to the pool) was over {pool['prepared_after_s']:.0f} s "
                      f"after their start (what it computes is kept on disk: a restart of the "
                      f"same version finds it done); the rows above were measured after it and "
                      f"with the pool's spares ready."]
    if wrong:
        lines += ["", "## Wrong answers", "",
                  "Wrong answers not among the packaged ones, judged as above: the time to a "
                  "verdict with its diagnosis, and of it the diagnosis (known mistakes "
                  "matched against their outputs computed once per problem version, the "
                  "numeric readings, and the probes of the submission that it runs).", "",
                  "| problem | solution | mode | p50 ms | diagnosis p50 ms | diagnosis p90 ms "
                  "| docker p50 ms | first finding |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
        for key, s in wrong.items():
            firsts = sorted({x.finding or "(none)" for x in s.samples})
            d = (wrong_docker or {}).get(key)
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {_fmt(s.pct('wall_ms', 0.5))} "
                         f"| {_fmt(s.pct('diagnosis_ms', 0.5))} "
                         f"| {_fmt(s.pct('diagnosis_ms', 0.9))} "
                         f"| {_fmt(d.pct('wall_ms', 0.5) if d else float('nan'))} "
                         f"| {'; '.join(firsts)} |")
    return "\n".join(lines) + "\n"


def docker_available() -> str | None:
    """Why the docker column cannot be measured here, or None when it can."""
    from app.settings import get_settings
    from judge import SandboxUnavailable, open_sandbox

    config = replace(get_settings().sandbox_config(), kind="docker", compile_cache=False)
    try:
        open_sandbox(config).close()
    except SandboxUnavailable as e:
        return str(e)
    return None


def run_bench(out: Path, runs: int, baseline_runs: int, burst_n: int,
              problems: list[str] | None, progress: Any = print,
              with_docker: bool = True, rate: float = 1.0, load_seconds: float = 60.0,
              cold: bool = True, only_cold: bool = False, cold_starts: int = 3) -> str:
    """The whole benchmark (`only_cold`: the cold start alone, a few minutes)."""
    cases = [c for c in CASES if not problems or c.problem in problems]
    flax = [c for c in cases if c.label == STATEMENT]
    speed = [machine_speed()]
    progress(f"machine speed (fixed workload, ms): {speed[0]}")
    why_not = docker_available() if with_docker else "not asked for"
    if why_not is not None:
        progress(f"no docker column: {why_not}")
    # A stopped server's background trusted processes may still be writing their outputs
    # there (their own sessions outlive it): the folder goes as far as it can.
    with tempfile.TemporaryDirectory(prefix="tj-bench-", ignore_cleanup_errors=True) as tmp_s:
        tmp = Path(tmp_s)
        cold_run = None
        cold_cases = [c for c in COLD_CASES if not problems or c.problem in problems]
        if (cold or only_cold) and cold_cases:
            cold_run = run_cold(tmp, progress, docker=why_not is None, cases=cold_cases,
                                starts=cold_starts)
            cold_run.docker_note = why_not or ""
        if only_cold:
            speed.append(machine_speed())
            text = cold_only_report(cold_run, speed)
        else:
            text = _run_servers(tmp, cases, flax, problems, runs, baseline_runs, burst_n, rate,
                                load_seconds, why_not, speed, cold_run, progress)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return text


def cold_only_report(cold: Cold | None, speed: list[dict[str, float] | None]) -> str:
    lines = ["# tensorjudge benchmark: cold start", "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
             f"{os.cpu_count()} cores with `tensorjudge bench --cold-only`.",
             *_speed_lines(speed)]
    if cold is not None:
        lines += targets({}, {}, float("nan"), None, None, cold)
        lines += cold_report(cold)
    return "\n".join(lines) + "\n"


def _run_servers(tmp: Path, cases: list[Case], flax: list[Case], problems: list[str] | None,
                 runs: int, baseline_runs: int, burst_n: int, rate: float,
                 load_seconds: float, why_not: str | None,
                 speed: list[dict[str, float] | None], cold: Cold | None,
                 progress: Any) -> str:
    """The warm servers: the judge as configured, the naive judge, the docker backend."""
    wrong_cases = [c for c in WRONG_CASES if not problems or c.problem in problems]
    progress("judge as configured (pool of prepared sandboxes, compilation cache):")
    with server("fast", tmp, {}) as url:
        client = Client(url)
        prepared = client.prepared()
        if prepared is not None:
            progress(f"  start-up preparation: {prepared:.0f} s")
        client.settle(120)
        fast = measure(client, cases, runs, settle=True, progress=progress)
        wrong = measure(client, wrong_cases, runs, settle=True, progress=progress)
        client.settle(120)
        b_case = next((c for c in cases if c.problem == "encoder-block"), cases[0])
        burst_s, verdicts, burst_cpu = burst(client, b_case, burst_n)
        per_sub = f", {burst_cpu / burst_n:.2f} s of CPU each" if burst_cpu else ""
        progress(f"  burst of {burst_n}: {burst_s:.1f} s{per_sub} ({set(verdicts)})")
        client.settle(120)
        load = None
        if flax and rate > 0 and load_seconds > 0:
            load = sustained(url, flax, rate, load_seconds)
            progress(f"  sustained {rate:g}/s for {load_seconds:.0f} s: "
                     f"p50 {load.all.pct('wall_ms', 0.5):,.0f} ms, "
                     f"p90 {load.all.pct('wall_ms', 0.9):,.0f} ms")
            client.settle(120)
        pool = client.pool()
    progress("naive judge (a fresh sandbox per submission, no pool, no cache):")
    # Expected outputs stay cached (they are the judge's, computed once per version).
    naive_env = {"TENSORJUDGE_POOL_SIZE": "0", "TENSORJUDGE_COMPILE_CACHE": "false",
                 "TENSORJUDGE_FORK_SERVER": "false", "TENSORJUDGE_FORK_WARMED": "false"}
    with server("naive", tmp, naive_env) as url:
        naive = measure(Client(url), cases, baseline_runs, settle=False, progress=progress)
    docker = wrong_docker = None
    if why_not is None:
        progress("the same judge with the docker backend (prepared containers):")
        with server("docker", tmp, {"TENSORJUDGE_SANDBOX": "docker"}) as url:
            client = Client(url)
            client.prepared()
            client.settle(300)
            docker = measure(client, cases, runs, settle=True, progress=progress)
            wrong_docker = measure(client, wrong_cases, runs, settle=True, progress=progress)
    speed.append(machine_speed())
    progress(f"machine speed (fixed workload, ms): {speed[-1]}")
    return report(fast, naive, burst_s, burst_n, burst_cpu, pool, runs, baseline_runs,
                  docker, wrong, load, speed, cold, wrong_docker)
