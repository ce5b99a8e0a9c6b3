"""`tensorjudge rejudge`: queueing stored submissions again."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli.common import admin_context, fail, service_call


def rejudge_cmd(
    submission: Annotated[list[int] | None, typer.Option(
        "--submission", help="a submission id (repeatable)")] = None,
    problem: Annotated[str | None, typer.Option(
        "--problem", help="every submission of this problem")] = None,
    same_version: Annotated[bool, typer.Option(
        "--same-version", help="judge against the version each was judged against "
        "(default: the problem's current version)")] = False,
) -> None:
    """Queue submissions again; their old results are kept."""
    from app.services import submissions

    if bool(submission) == bool(problem):
        fail("give --submission ID or --problem SLUG")
    ctx = admin_context()
    ids = list(submission or []) or service_call(submissions.ids_of_problem, ctx, problem)
    n = service_call(submissions.rejudge, ctx, ids, latest_version=not same_version)
    typer.echo(f"{n} submissions queued again")
