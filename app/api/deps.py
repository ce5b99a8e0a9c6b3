"""Typed dependencies shared by the routers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from app.context import Context
from app.services import sessions, users
from app.services.arrivals import Arrival
from app.services.errors import Forbidden, Unauthorized
from app.services.users import UserView

_bearer = HTTPBearer(auto_error=False, description="a token from POST /api/v1/tokens")


def get_ctx(request: Request) -> Context:
    return request.app.state.ctx


CtxDep = Annotated[Context, Depends(get_ctx)]


async def arrival(request: Request) -> AsyncIterator[Arrival]:
    """When a new submission's request reached the service: stamped on the event loop, in
    the order requests came, before any work on a thread (app/services/arrivals.py). A
    route's first dependency. One that fails before queuing its submission leaves here."""
    arrivals = get_ctx(request).arrivals
    stamp = arrivals.enter()
    try:
        yield stamp
    finally:
        arrivals.leave(stamp)


ArrivalDep = Annotated[Arrival, Depends(arrival)]


def bearer_token(
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    if creds is None or creds.scheme.lower() != "bearer" or not creds.credentials:
        raise Unauthorized("a bearer token is required (POST /api/v1/tokens gives one)")
    return creds.credentials


def current_user(ctx: CtxDep, token: Annotated[str, Depends(bearer_token)]) -> UserView:
    return users.user_for_token(ctx, token)


UserDep = Annotated[UserView, Depends(current_user)]


def bearer_or_session_user(
    ctx: CtxDep, request: Request,
    creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> UserView:
    """A bearer token, or else the pages' session cookie: browsers' EventSource cannot send
    an Authorization header. Only for reads (GET): form posts are the pages' own, with CSRF
    checks."""
    if creds is not None:
        return current_user(ctx, bearer_token(creds))
    session = sessions.decode(ctx, request.cookies.get(sessions.COOKIE))
    user = sessions.user_of(ctx, session)
    if user is None:
        raise Unauthorized("a bearer token or a signed-in session is required")
    return user


BrowserUserDep = Annotated[UserView, Depends(bearer_or_session_user)]
TokenDep = Annotated[str, Depends(bearer_token)]


def admin_user(user: UserDep) -> UserView:
    if not user.is_admin:
        raise Forbidden("only admins may do this")
    return user


AdminDep = Annotated[UserView, Depends(admin_user)]
