"""`tensorjudge db ...`: the database schema."""

from __future__ import annotations

from typing import Annotated

import typer

from app.settings import get_settings

db_cli = typer.Typer(no_args_is_help=True, help="The database.")


@db_cli.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="target revision")] = "head",
) -> None:
    """Apply the migrations."""
    from app.context import Context
    from app.db import migrate

    st = get_settings()
    ctx = Context.create(st)
    before = migrate.current_revision(ctx.db)
    migrate.upgrade(ctx.db, revision)
    after = migrate.current_revision(ctx.db)
    typer.echo(f"database at revision {after}" + ("" if after != before
                                                  else " (already current)"))


@db_cli.command("current")
def db_current() -> None:
    """The schema revision of the database and the one this code needs."""
    from app.context import Context
    from app.db import migrate

    ctx = Context.create(get_settings())
    typer.echo(f"database: {migrate.current_revision(ctx.db) or 'empty'}; "
               f"code: {migrate.head_revision()}")
