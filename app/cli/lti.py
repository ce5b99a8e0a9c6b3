"""`tensorjudge lti ...`: the learning platforms this tool is registered with (LTI 1.3)."""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli.common import admin_context, service_call

lti_cli = typer.Typer(no_args_is_help=True, help="LTI 1.3 platform registrations.")


@lti_cli.command("register")
def lti_register(
    issuer: Annotated[str, typer.Option(help="the platform's issuer (iss)")],
    client_id: Annotated[str, typer.Option(help="this tool's client id at the platform")],
    login_url: Annotated[str, typer.Option(help="the platform's OIDC authorisation URL")],
    token_url: Annotated[str, typer.Option(help="the platform's OAuth 2 token URL")],
    jwks_url: Annotated[str, typer.Option(help="the platform's public key set URL")],
    deployment: Annotated[list[str], typer.Option(help="a deployment id (repeatable)")],
    audience: Annotated[str | None, typer.Option(
        help="the token endpoint's audience, when not its URL")] = None,
) -> None:
    """Register a platform; a key pair for this tool is made (published at /lti/jwks)."""
    from app.lti import registrations

    ctx = admin_context()
    r = service_call(registrations.register, ctx, issuer=issuer, client_id=client_id,
                     auth_login_url=login_url, auth_token_url=token_url,
                     key_set_url=jwks_url, deployment_ids=deployment, auth_audience=audience)
    typer.echo(f"registration {r.id}: {r.issuer} (client id {r.client_id}). At the platform, "
               "register the tool's URLs: /lti/login, /lti/launch (also for deep linking), "
               "/lti/jwks under this server's public address.")


@lti_cli.command("list")
def lti_list() -> None:
    """The registrations."""
    from app.lti import registrations

    ctx = admin_context()
    for r in registrations.list_registrations(ctx):
        typer.echo(f"{r.id:4} {r.issuer}  client {r.client_id}  deployments "
                   f"{', '.join(r.deployment_ids)}")


@lti_cli.command("remove")
def lti_remove(registration: Annotated[int, typer.Argument()]) -> None:
    """Remove a registration (its courses stay, without their link)."""
    from app.lti import registrations

    ctx = admin_context()
    service_call(registrations.remove, ctx, registration)
    typer.echo(f"registration {registration} removed")
