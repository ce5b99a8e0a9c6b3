"""The learning platforms this tool is registered with, as pylti1p3 reads them, and the
tool's own key pairs (one per registration, made here; the platform reads the public half
from /lti/jwks)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pylti1p3.deployment import Deployment
from pylti1p3.registration import Registration
from pylti1p3.tool_config import ToolConfAbstract
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app.context import Context
from app.db.models import LtiRegistration
from app.services.errors import Conflict, Invalid, NotFound


@dataclass(frozen=True)
class RegistrationView:
    id: int
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    deployment_ids: tuple[str, ...]


def _url(value: str, name: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Invalid(f"{name}: an http(s) URL")
    return value


def register(ctx: Context, *, issuer: str, client_id: str, auth_login_url: str,
             auth_token_url: str, key_set_url: str, deployment_ids: list[str],
             auth_audience: str | None = None) -> RegistrationView:
    """Register a platform; a key pair for this tool is made for it."""
    if not issuer.strip() or not client_id.strip():
        raise Invalid("issuer and client id: both given")
    if not deployment_ids:
        raise Invalid("deployment ids: at least one")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    try:
        with ctx.db.transaction() as s:
            reg = LtiRegistration(
                issuer=issuer.strip(), client_id=client_id.strip(),
                auth_login_url=_url(auth_login_url, "auth login URL"),
                auth_token_url=_url(auth_token_url, "token URL"),
                key_set_url=_url(key_set_url, "key set URL"), auth_audience=auth_audience,
                deployment_ids=[str(d) for d in deployment_ids], tool_private_key=private,
                tool_public_key=public)
            s.add(reg)
            s.flush()
            return _view(reg)
    except IntegrityError as e:
        raise Conflict(f"{issuer} is registered with client id {client_id} already") from e


def _view(r: LtiRegistration) -> RegistrationView:
    return RegistrationView(r.id, r.issuer, r.client_id, r.auth_login_url, r.auth_token_url,
                            r.key_set_url, tuple(r.deployment_ids))


def list_registrations(ctx: Context) -> list[RegistrationView]:
    with ctx.db.transaction() as s:
        return [_view(r) for r in s.scalars(select(LtiRegistration)
                                            .order_by(LtiRegistration.id))]


def remove(ctx: Context, registration_id: int) -> None:
    with ctx.db.transaction() as s:
        reg = s.get(LtiRegistration, registration_id)
        if reg is None:
            raise NotFound(f"no LTI registration {registration_id}")
        s.delete(reg)


def jwks(ctx: Context) -> dict[str, list[Any]]:
    """The tool's public keys, each with the key id its tokens name."""
    with ctx.db.transaction() as s:
        keys = list(s.scalars(select(LtiRegistration.tool_public_key)))
    return {"keys": [json.loads(json.dumps(Registration.get_jwk(k))) for k in keys]}


def to_pylti(r: LtiRegistration) -> Registration:
    reg = (Registration().set_issuer(r.issuer).set_client_id(r.client_id)
           .set_auth_login_url(r.auth_login_url).set_auth_token_url(r.auth_token_url)
           .set_key_set_url(r.key_set_url).set_tool_private_key(r.tool_private_key)
           .set_tool_public_key(r.tool_public_key))
    if r.auth_audience:
        reg.set_auth_audience(r.auth_audience)
    return reg


class DbToolConf(ToolConfAbstract[Any]):
    """pylti1p3's tool configuration, read from `lti_registrations`: an issuer may have
    several client ids (several registrations with one platform)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.found: LtiRegistration | None = None  # the registration of the last lookup

    def _find(self, iss: str, client_id: str | None) -> LtiRegistration | None:
        with self.ctx.db.transaction() as s:
            q = select(LtiRegistration).where(LtiRegistration.issuer == iss)
            if client_id:
                q = q.where(LtiRegistration.client_id == client_id)
            rows = list(s.scalars(q))
        # Without a client id, only an issuer with a single registration is unambiguous.
        return rows[0] if len(rows) == 1 else None

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss: str, *args: Any, **kwargs: Any) -> Registration:
        return self.find_registration_by_params(iss, None, *args, **kwargs)  # type: ignore[arg-type]

    def find_registration_by_params(self, iss: str, client_id: str, *args: Any,
                                    **kwargs: Any) -> Registration:
        self.found = self._find(iss, client_id)
        return to_pylti(self.found) if self.found else None  # type: ignore[return-value]

    def find_deployment(self, iss: str, deployment_id: str) -> Deployment | None:
        return self.find_deployment_by_params(iss, deployment_id, None)  # type: ignore[arg-type]

    def find_deployment_by_params(self, iss: str, deployment_id: str, client_id: str,
                                  *args: Any, **kwargs: Any) -> Deployment | None:
        reg = self._find(iss, client_id)
        if reg is None or str(deployment_id) not in reg.deployment_ids:
            return None
        return Deployment().set_deployment_id(deployment_id)
