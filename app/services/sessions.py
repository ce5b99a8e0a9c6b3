"""Browser sessions: a signed cookie that holds a bearer token and a CSRF secret.

The cookie's value is `payload.signature`, the payload a small JSON object, the signature an
HMAC-SHA256 under a key derived from TENSORJUDGE_SECRET_KEY (generated per data directory
when unset). Signed in, it carries an ordinary bearer token (see `users.issue_token`), so a
session expires with its token and signing out revokes it. Every session, signed in or not,
carries a random CSRF secret that the pages put in a hidden field of each form; a form post
is accepted only when the field matches the cookie's secret (and, when the browser says where
the post comes from, the origin is this site's). The cookie itself is HttpOnly and
SameSite=Lax.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from app.context import Context
from app.services import users
from app.services.errors import Forbidden, Unauthorized
from app.services.users import UserView

COOKIE = "tj_session"
MAX_COOKIE = 1024


@dataclass(frozen=True)
class Session:
    csrf: str
    token: str | None = None

    @classmethod
    def anonymous(cls) -> Session:
        return cls(csrf=secrets.token_urlsafe(24))


def _key(ctx: Context) -> bytes:
    secret = ctx.settings.effective_secret_key().encode()
    return hmac.new(secret, b"tensorjudge session cookie v1", hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode(ctx: Context, session: Session) -> str:
    data: dict[str, str] = {"c": session.csrf}
    if session.token:
        data["t"] = session.token
    payload = _b64(json.dumps(data, separators=(",", ":")).encode())
    sig = _b64(hmac.new(_key(ctx), payload.encode(), hashlib.sha256).digest())
    return f"{payload}.{sig}"


def decode(ctx: Context, value: str | None) -> Session | None:
    """The session of a cookie value; None when it is missing, malformed or not ours."""
    if not value or len(value) > MAX_COOKIE or value.count(".") != 1:
        return None
    payload, sig = value.split(".")
    want = _b64(hmac.new(_key(ctx), payload.encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(sig, want):
        return None
    try:
        data = json.loads(_unb64(payload))
    except (ValueError, binascii.Error):
        return None
    if not isinstance(data, dict):
        return None
    csrf, token = data.get("c"), data.get("t")
    if not isinstance(csrf, str) or not csrf or (token is not None and not isinstance(token, str)):
        return None
    return Session(csrf=csrf, token=token)


def user_of(ctx: Context, session: Session | None) -> UserView | None:
    """The signed-in user, or None (no session, or its token expired or was revoked)."""
    if session is None or not session.token:
        return None
    try:
        return users.user_for_token(ctx, session.token)
    except Unauthorized:
        return None


def sign_in(ctx: Context, username: str, password: str) -> tuple[UserView, Session]:
    """A new session (a new CSRF secret too) for these credentials; Unauthorized if wrong."""
    user = users.authenticate(ctx, username, password)
    return user, Session(csrf=secrets.token_urlsafe(24), token=users.issue_token(ctx, user))


def sign_up(ctx: Context, username: str, password: str) -> tuple[UserView, Session]:
    """Create the account and sign it in (Invalid or Conflict as `users.create_user`)."""
    user = users.create_user(ctx, username, password)
    return user, Session(csrf=secrets.token_urlsafe(24), token=users.issue_token(ctx, user))


def sign_out(ctx: Context, session: Session | None) -> Session:
    """Revoke the session's token; the browser gets a fresh anonymous session."""
    if session is not None and session.token:
        users.revoke_token(ctx, session.token)
    return Session.anonymous()


def check_csrf(session: Session | None, submitted: str | None, *, origin: str | None = None,
               host: str | None = None) -> None:
    """Forbidden unless the form's token is the session's (and the Origin, if the browser
    sent one, names this host; the scheme is not compared, a TLS proxy may sit in front)."""
    if origin and host and origin != "null" and urlsplit(origin).netloc.lower() != host.lower():
        raise Forbidden("the form was posted from another site")
    if session is None or not submitted or not hmac.compare_digest(session.csrf, submitted):
        raise Forbidden("the form has expired; reload the page and try again")
