"""pylti1p3's request, cookie, session, redirect and launch-data storage classes for
FastAPI. pylti1p3 itself knows Django and Flask; here a request is the form or query fields
read beforehand (pylti1p3 reads them synchronously), cookies to set are collected and put on
whatever response the route returns, and the launch data (the OIDC state's parameters, the
nonces, validated launches) live in the database (`lti_state`), since the login and the
launch may reach two different servers."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pylti1p3.cookie import CookieService
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request
from pylti1p3.session import SessionService
from sqlalchemy import delete, select
from starlette.responses import RedirectResponse, Response

from app.context import Context
from app.db import rowcount
from app.db.models import LtiState, utcnow


class FastApiRequest(Request):
    def __init__(self, params: Mapping[str, str], cookies: Mapping[str, str], *,
                 secure: bool) -> None:
        self._params = dict(params)
        self._cookies = dict(cookies)
        self._secure = secure

    @property
    def session(self) -> dict[str, Any]:
        return {}  # the launch data storage below stands in for a session

    def is_secure(self) -> bool:
        return self._secure

    def get_param(self, key: str) -> str:
        return self._params.get(key)  # type: ignore[return-value]

    def get_cookie(self, key: str) -> str | None:
        return self._cookies.get(key)


class FastApiCookieService(CookieService):
    """pylti1p3's state cookie: SameSite=None (and Secure) over HTTPS, since the launch is a
    form posted by the platform's site, which does not send Lax cookies; Lax over plain HTTP
    (development), where browsers refuse SameSite=None without Secure."""

    def __init__(self, request: FastApiRequest) -> None:
        self._request = request
        self._pending: dict[str, tuple[str, int | None]] = {}

    def _key(self, name: str) -> str:
        return f"{self._cookie_prefix}-{name}"

    def get_cookie(self, name: str) -> str | None:
        return self._request.get_cookie(self._key(name))

    def set_cookie(self, name: str, value: str | int, exp: int | None = 3600) -> None:
        self._pending[self._key(name)] = (str(value), exp)

    def apply(self, response: Response) -> Response:
        secure = self._request.is_secure()
        for key, (value, exp) in self._pending.items():
            response.set_cookie(key, value, max_age=exp, path="/", httponly=True,
                                secure=secure, samesite="none" if secure else "lax")
        return response


class FastApiRedirect(Redirect[Response]):
    def __init__(self, location: str, cookies: FastApiCookieService) -> None:
        self._location = location
        self._cookies = cookies

    def do_redirect(self) -> Response:
        return self._cookies.apply(RedirectResponse(self._location, status_code=302))

    def do_js_redirect(self) -> Response:
        return self.do_redirect()

    def set_redirect_url(self, location: str) -> None:
        self._location = location

    def get_redirect_url(self) -> str:
        return self._location


class DbLaunchDataStorage(LaunchDataStorage[Any]):
    """Keys and values in `lti_state`, each with its expiry; no session cookie (the keys hold
    random states and nonces)."""

    def __init__(self, ctx: Context) -> None:
        super().__init__()
        self.ctx = ctx

    def get_session_cookie_name(self) -> str | None:
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> Any:
        with self.ctx.db.transaction() as s:
            row = s.get(LtiState, self._prepare_key(key))
            if row is None or row.expires_at <= utcnow():
                return None
            return row.value.get("v")

    def set_value(self, key: str, value: Any, exp: int | None = None) -> None:
        now = utcnow()
        with self.ctx.db.transaction() as s:
            s.execute(delete(LtiState).where(LtiState.expires_at <= now))
            s.merge(LtiState(key=self._prepare_key(key), value={"v": value},
                             expires_at=now + timedelta(seconds=exp or 86400)))

    def check_value(self, key: str) -> bool:
        return self.get_value(key) is not None

    def take(self, key: str) -> bool:
        """Whether the key was there (unexpired); it is gone after."""
        with self.ctx.db.transaction() as s:
            found = s.scalar(select(LtiState.expires_at)
                             .where(LtiState.key == self._prepare_key(key)))
            n = rowcount(s.execute(delete(LtiState)
                                   .where(LtiState.key == self._prepare_key(key))))
        return bool(n) and found is not None and found > utcnow()


class DbSessionService(SessionService):
    """A nonce is good for one launch: checked once, then gone (a replayed launch token is
    refused even within its lifetime)."""

    data_storage: DbLaunchDataStorage

    def __init__(self, request: FastApiRequest, storage: DbLaunchDataStorage) -> None:
        super().__init__(request)
        self.data_storage = storage

    def check_nonce(self, nonce: str) -> bool:
        return self.data_storage.take(self._get_key("nonce", nonce))


class FastApiOIDCLogin(OIDCLogin[FastApiRequest, Any, DbSessionService, FastApiCookieService,
                                 Response]):
    def __init__(self, request: FastApiRequest, tool_config: Any, ctx: Context) -> None:
        storage = DbLaunchDataStorage(ctx)
        cookies = FastApiCookieService(request)
        super().__init__(request, tool_config, DbSessionService(request, storage), cookies,
                         storage)
        self.cookies = cookies

    def get_redirect(self, url: str) -> Redirect[Response]:
        return FastApiRedirect(url, self._cookie_service)


class FastApiMessageLaunch(MessageLaunch[FastApiRequest, Any, DbSessionService,
                                         FastApiCookieService]):
    def __init__(self, request: FastApiRequest, tool_config: Any, ctx: Context) -> None:
        storage = DbLaunchDataStorage(ctx)
        super().__init__(request, tool_config, DbSessionService(request, storage),
                         FastApiCookieService(request), storage)

    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)

    @classmethod
    def restore(cls, launch_id: str, request: FastApiRequest, tool_config: Any,
                ctx: Context) -> FastApiMessageLaunch:
        """A launch validated earlier (the deep-linking picker posts back its id)."""
        launch = cls(request, tool_config, ctx)
        data = launch.get_session_service().get_launch_data(launch_id)
        if not data:
            from pylti1p3.exception import LtiException

            raise LtiException("Launch data not found")
        launch.set_launch_id(launch_id).set_auto_validation(enable=False)
        launch.set_jwt({"body": data}).set_restored().validate_registration()  # type: ignore[typeddict-item]
        return launch
