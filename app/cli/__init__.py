"""The `tensorjudge` command line: the root app, assembled from one module per command
group. The top-level commands are registered here, not where they are defined: decorating
them there would need this module (an import circle), and the order here is the order
`--help` lists them in."""

from __future__ import annotations

import sys

import typer

from app.cli.bench import bench_cmd, fairness_cmd
from app.cli.courses import assignments_cli, courses_cli
from app.cli.db import db_cli
from app.cli.judging import judge_cmd
from app.cli.lti import lti_cli
from app.cli.problems import problems_cli
from app.cli.service import serve_cmd, worker_cmd
from app.cli.submissions import rejudge_cmd
from app.cli.users import users_cli

cli = typer.Typer(add_completion=False, no_args_is_help=True, help="tensorjudge: an online "
                  "judge for machine-learning implementation problems.")
cli.add_typer(problems_cli, name="problems")
cli.add_typer(users_cli, name="users")
cli.add_typer(db_cli, name="db")
cli.add_typer(courses_cli, name="courses")
cli.add_typer(assignments_cli, name="assignments")
cli.add_typer(lti_cli, name="lti")
cli.command("judge")(judge_cmd)
cli.command("serve")(serve_cmd)
cli.command("worker")(worker_cmd)
cli.command("rejudge")(rejudge_cmd)
cli.command("bench")(bench_cmd)
cli.command("fairness")(fairness_cmd)


def main() -> None:
    try:
        cli()
    except KeyboardInterrupt:
        sys.exit(130)
