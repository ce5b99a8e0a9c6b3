"""The pages' side of browser sessions: reading the cookie, setting it, checking forms.
The rules (signing, tokens, CSRF) are in app.services.sessions."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request
from starlette.responses import Response

from app.context import Context
from app.services import sessions
from app.services.sessions import Session
from app.services.users import UserView


@dataclass
class PageState:
    session: Session
    user: UserView | None
    dirty: bool  # the browser's cookie must be (re)set


def state(request: Request) -> PageState:
    """The session and user of this request (computed once per request)."""
    cached = getattr(request.state, "page", None)
    if cached is not None:
        return cached
    ctx: Context = request.app.state.ctx
    session = sessions.decode(ctx, request.cookies.get(sessions.COOKIE))
    dirty = False
    if session is None:
        session, dirty = Session.anonymous(), True
    user = sessions.user_of(ctx, session)
    if user is None and session.token:
        # The token expired or was revoked: go on anonymously with the same CSRF secret.
        session, dirty = Session(csrf=session.csrf), True
    st = PageState(session, user, dirty)
    request.state.page = st
    return st


def replace(request: Request, session: Session, user: UserView | None) -> PageState:
    st = PageState(session, user, True)
    request.state.page = st
    return st


def apply_cookie(request: Request, response: Response) -> Response:
    st: PageState | None = getattr(request.state, "page", None)
    if st is None or not st.dirty:
        return response
    ctx: Context = request.app.state.ctx
    response.set_cookie(
        sessions.COOKIE, sessions.encode(ctx, st.session),
        max_age=int(ctx.settings.token_ttl_hours * 3600), path="/", httponly=True,
        samesite="lax", secure=request.url.scheme == "https")
    return response


def check_form(request: Request, token: str | None) -> None:
    """Forbidden unless the form carries this session's CSRF token (services.sessions)."""
    sessions.check_csrf(state(request).session, token, origin=request.headers.get("origin"),
                        host=request.headers.get("host") or request.url.netloc)
