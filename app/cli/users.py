"""`tensorjudge users ...`: user accounts."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from app.cli.common import admin_context, service_call

users_cli = typer.Typer(no_args_is_help=True, help="User accounts.")


def _read_password(password_stdin: bool) -> str:
    if password_stdin:
        pw = sys.stdin.readline().rstrip("\r\n")
    else:
        pw = typer.prompt("password", hide_input=True, confirmation_prompt=True)
    return pw


@users_cli.command("create")
def users_create(
    name: Annotated[str, typer.Argument(help="username")],
    admin: Annotated[bool, typer.Option("--admin", help="an administrator")] = False,
    password_stdin: Annotated[bool, typer.Option(
        "--password-stdin", help="read the password from the first line of stdin")] = False,
) -> None:
    """Create a user (password from a prompt or --password-stdin)."""
    from app.services import users

    ctx = admin_context()
    u = service_call(users.create_user, ctx, name, _read_password(password_stdin),
                     admin=admin)
    typer.echo(f"user {u.username} created (id {u.id}{', admin' if u.is_admin else ''})")


@users_cli.command("list")
def users_list() -> None:
    from app.services import users

    for u in users.list_users(admin_context()):
        typer.echo(f"{u.id:6} {u.username:32} {'admin' if u.is_admin else ''}")


@users_cli.command("set-password")
def users_set_password(
    name: Annotated[str, typer.Argument(help="username")],
    password_stdin: Annotated[bool, typer.Option("--password-stdin")] = False,
) -> None:
    from app.services import users

    service_call(users.set_password, admin_context(), name, _read_password(password_stdin))
    typer.echo("password changed")


@users_cli.command("revoke-tokens")
def users_revoke_tokens(name: Annotated[str, typer.Argument(help="username")]) -> None:
    """Revoke every token of a user."""
    from app.services import users

    n = service_call(users.revoke_all_tokens, admin_context(), name)
    typer.echo(f"{n} tokens revoked")
