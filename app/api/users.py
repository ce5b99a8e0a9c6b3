"""Users and tokens."""

from __future__ import annotations

from fastapi import APIRouter, Response

from app.api.deps import CtxDep, TokenDep, UserDep
from app.api.schemas import Credentials, MeOut, TokenOut, UserOut, errors
from app.services import users

router = APIRouter(prefix="/api/v1", tags=["users"])


@router.post("/users", status_code=201, response_model=UserOut,
             responses=errors(409, 413, 422))
def register(body: Credentials, ctx: CtxDep) -> UserOut:
    """Create an account."""
    u = users.create_user(ctx, body.username, body.password)
    return UserOut(id=u.id, username=u.username)


@router.get("/users/me", response_model=MeOut, responses=errors(401))
def me(user: UserDep) -> MeOut:
    return MeOut(id=user.id, username=user.username, is_admin=user.is_admin)


@router.post("/tokens", status_code=201, response_model=TokenOut,
             responses=errors(401, 413, 422))
def login(body: Credentials, ctx: CtxDep) -> TokenOut:
    """Exchange a username and password for a bearer token."""
    user = users.authenticate(ctx, body.username, body.password)
    return TokenOut(token=users.issue_token(ctx, user))


@router.delete("/tokens/current", status_code=204, responses=errors(401))
def logout(ctx: CtxDep, user: UserDep, token: TokenDep) -> Response:
    """Revoke the token this request carries."""
    users.revoke_token(ctx, token)
    return Response(status_code=204)
