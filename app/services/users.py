"""Users, passwords (argon2) and opaque bearer tokens (stored as keyed hashes, revocable)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from app.context import Context
from app.db import rowcount
from app.db.models import Token, User, utcnow
from app.services.errors import Conflict, Invalid, NotFound, Unauthorized

USERNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{3,32}$")
MIN_PASSWORD, MAX_PASSWORD = 8, 256
TOKEN_PREFIX = "tj_"


@dataclass(frozen=True)
class UserView:
    id: int
    username: str
    is_admin: bool

    @classmethod
    def of(cls, u: User) -> UserView:
        return cls(u.id, u.username, u.is_admin)


@lru_cache(maxsize=4)
def _hasher(time_cost: int, memory_kib: int) -> PasswordHasher:
    return PasswordHasher(time_cost=time_cost, memory_cost=memory_kib)


def hasher(ctx: Context) -> PasswordHasher:
    return _hasher(ctx.settings.argon2_time_cost, ctx.settings.argon2_memory_kib)


def check_username(username: str) -> None:
    if not USERNAME_RE.match(username):
        raise Invalid("username: 3 to 32 characters of letters, digits, '_', '.', '-'")


def check_password(password: str) -> None:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise Invalid(f"password: {MIN_PASSWORD} to {MAX_PASSWORD} characters")
    if not _encodable(password):
        raise Invalid("password: not valid UTF-8 text (it contains unpaired surrogates)")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def create_user(ctx: Context, username: str, password: str, *, admin: bool = False) -> UserView:
    check_username(username)
    check_password(password)
    password_hash = hasher(ctx).hash(password)
    try:
        with ctx.db.transaction() as s:
            if s.scalar(select(User.id).where(User.username == username)) is not None:
                raise Conflict(f"the username {username!r} is taken")
            user = User(username=username, password_hash=password_hash, is_admin=admin)
            s.add(user)
            s.flush()
            return UserView.of(user)
    except IntegrityError as e:  # a concurrent registration of the same name
        raise Conflict(f"the username {username!r} is taken") from e


def get_user(ctx: Context, username: str) -> UserView:
    with ctx.db.transaction() as s:
        user = s.scalar(select(User).where(User.username == username))
        if user is None:
            raise NotFound(f"no user {username!r}")
        return UserView.of(user)


def list_users(ctx: Context) -> list[UserView]:
    with ctx.db.transaction() as s:
        return [UserView.of(u) for u in s.scalars(select(User).order_by(User.id))]


def set_password(ctx: Context, username: str, password: str) -> None:
    check_password(password)
    password_hash = hasher(ctx).hash(password)
    with ctx.db.transaction() as s:
        user = s.scalar(select(User).where(User.username == username))
        if user is None:
            raise NotFound(f"no user {username!r}")
        user.password_hash = password_hash


def set_admin(ctx: Context, username: str, admin: bool) -> None:
    with ctx.db.transaction() as s:
        user = s.scalar(select(User).where(User.username == username))
        if user is None:
            raise NotFound(f"no user {username!r}")
        user.is_admin = admin


_DUMMY: dict[tuple[int, int], str] = {}


def authenticate(ctx: Context, username: str, password: str) -> UserView:
    """The user whose password this is; Unauthorized otherwise (same answer, same cost, for an
    unknown name and a wrong password)."""
    ph = hasher(ctx)
    user, stored = None, None
    # A name no account can have, or a password no account can have set (unpaired
    # surrogates): answered like an unknown user, without touching the database with text it
    # may not even be able to store.
    if USERNAME_RE.match(username) and _encodable(password):
        with ctx.db.transaction() as s:
            user = s.scalar(select(User).where(User.username == username))
            stored = user.password_hash if user is not None else None
    if stored is None:
        password = password if _encodable(password) else "not a password either"
        key = (ctx.settings.argon2_time_cost, ctx.settings.argon2_memory_kib)
        dummy = _DUMMY.setdefault(key, ph.hash("not a password"))
        with contextlib.suppress(VerificationError):
            ph.verify(dummy, password)
        raise Unauthorized("wrong username or password")
    try:
        ph.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError) as e:
        raise Unauthorized("wrong username or password") from e
    assert user is not None
    if ph.check_needs_rehash(stored):
        with ctx.db.transaction() as s:
            s.execute(update(User).where(User.id == user.id)
                      .values(password_hash=ph.hash(password)))
    return UserView.of(user)


def token_hash(ctx: Context, token: str) -> str:
    key = ctx.settings.effective_secret_key().encode()
    return hmac.new(key, token.encode(), hashlib.sha256).hexdigest()


def issue_token(ctx: Context, user: UserView) -> str:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    with ctx.db.transaction() as s:
        s.add(Token(user_id=user.id, token_hash=token_hash(ctx, token), created_at=now,
                    expires_at=now + timedelta(hours=ctx.settings.token_ttl_hours)))
    return token


def user_for_token(ctx: Context, token: str) -> UserView:
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        raise Unauthorized("invalid token")
    now = utcnow()
    with ctx.db.transaction() as s:
        row = s.execute(
            select(Token, User).join(User, Token.user_id == User.id)
            .where(Token.token_hash == token_hash(ctx, token))
        ).first()
        if row is None:
            raise Unauthorized("invalid token")
        tok, user = row
        if tok.revoked_at is not None:
            raise Unauthorized("the token was revoked")
        if tok.expires_at <= now:
            raise Unauthorized("the token expired")
        # Record use at most once a minute: reads should not all become writes.
        if tok.last_used_at is None or now - tok.last_used_at > timedelta(minutes=1):
            tok.last_used_at = now
        return UserView.of(user)


def revoke_token(ctx: Context, token: str) -> bool:
    with ctx.db.transaction() as s:
        res = s.execute(update(Token).where(Token.token_hash == token_hash(ctx, token),
                                            Token.revoked_at.is_(None))
                        .values(revoked_at=utcnow()))
        return bool(rowcount(res))


def revoke_all_tokens(ctx: Context, username: str) -> int:
    with ctx.db.transaction() as s:
        uid = s.scalar(select(User.id).where(User.username == username))
        if uid is None:
            raise NotFound(f"no user {username!r}")
        res = s.execute(update(Token).where(Token.user_id == uid, Token.revoked_at.is_(None))
                        .values(revoked_at=utcnow()))
        return int(rowcount(res))
