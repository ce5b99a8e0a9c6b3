"""`tensorjudge bench`: timing the judge through real servers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def bench_cmd(
    out: Annotated[Path, typer.Option(help="where the Markdown table goes")] = Path(
        "bench/RESULTS.md"),
    runs: Annotated[int, typer.Option(help="timed submissions per row")] = 10,
    baseline_runs: Annotated[int, typer.Option(help="the same, for the naive judge")] = 10,
    burst: Annotated[int, typer.Option(help="submissions in the burst")] = 50,
    problem: Annotated[list[str] | None, typer.Option(help="only these problems")] = None,
    rate: Annotated[float, typer.Option(
        help="sustained load: Flax submissions per second arriving at random (0: none)")] = 1.0,
    load_seconds: Annotated[float, typer.Option(
        help="sustained load: how long submissions keep arriving")] = 60.0,
    docker: Annotated[bool, typer.Option(
        help="also measure the docker sandbox backend (needs an engine and the images)")] = True,
    cold: Annotated[bool, typer.Option(
        help="begin with the cold start: a judge with empty caches, its first Submit of each "
             "framework against fresh plain processes")] = True,
    cold_only: Annotated[bool, typer.Option(
        help="measure only the cold start (a few minutes)")] = False,
    cold_starts: Annotated[int, typer.Option(
        min=1, help="fresh starts measured for the cold start (each figure their median)")] = 3,
) -> None:
    """Time POST-to-verdict through real servers: a judge's cold start against fresh plain
    processes, the judge as configured against a naive judge (fresh sandbox per submission,
    no pool, no cache), and the same judge with the docker backend; print and write the
    table."""
    from app.bench import run_bench

    text = run_bench(out, runs, baseline_runs, burst, problem,
                     progress=lambda m: typer.echo(m, err=True), with_docker=docker,
                     rate=rate, load_seconds=load_seconds, cold=cold, only_cold=cold_only,
                     cold_starts=cold_starts)
    typer.echo(text)
    typer.echo(f"written to {out}", err=True)


def fairness_cmd(
    problem: Annotated[list[str] | None, typer.Option(help="only these problems")] = None,
    rounds: Annotated[int, typer.Option(min=1, help="judgements alone and loaded, each")] = 5,
    out: Annotated[Path | None, typer.Option(help="also write the table here")] = None,
) -> None:
    """Judge every packaged accepted submission ROUNDS times alone and ROUNDS times under
    load (a busy process on every core and another judgement beside it): fail unless each
    is accepted every time and charged the same CPU and compilation loaded as alone."""
    from app.bench_fairness import report, run
    from app.cli.common import fail, open_sandbox
    from app.settings import get_settings
    from judge import discover

    root = get_settings().problems_dir
    slugs = problem or [p.name for p in discover(root)]
    rows = run(root, slugs, rounds, open_sandbox(), lambda m: typer.echo(m, err=True))
    text = report(rows, rounds)
    typer.echo(text)
    if out is not None:
        out.write_text(text)
    bad = [f"{r.case.slug} {r.case.label}" for r in rows if not r.ok]
    if bad:
        fail(f"{len(bad)} submissions judged otherwise under load: {', '.join(bad)}", 1)
