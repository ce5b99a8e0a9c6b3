"""One error shape for the whole API: RFC 9457 problem details (`application/problem+json`),
`{type, title, status, detail}` with `detail` always a string, plus `errors: [{field,
message}]` for validation errors. Whatever layer fails (a service, FastAPI's validation,
Starlette's routing, the body-size limit, an unexpected exception) answers this way."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.services.errors import ServiceError

MEDIA_TYPE = "application/problem+json"
log = logging.getLogger("tensorjudge.api")


class ProblemResponse(JSONResponse):
    media_type = MEDIA_TYPE


def title_of(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem(status: int, detail: str, *, headers: dict[str, str] | None = None,
            errors: list[dict[str, str]] | None = None) -> ProblemResponse:
    """The error answer: `type` is about:blank (the status says what kind of error it is)."""
    body: dict[str, Any] = {"type": "about:blank", "title": title_of(status), "status": status,
                            "detail": detail}
    if errors is not None:
        body["errors"] = errors
    return ProblemResponse(body, status_code=status, headers=headers)


def field_errors(exc: RequestValidationError) -> list[dict[str, str]]:
    """Pydantic's errors as `{field, message}`: the field a dotted path without the part
    of the request it came from (`body`, `query`, `path`)."""
    out = []
    for e in exc.errors():
        loc = [str(p) for p in e.get("loc", ())]
        if loc and loc[0] in ("body", "query", "path", "header", "cookie"):
            loc = loc[1:]
        out.append({"field": ".".join(loc) or "body", "message": str(e.get("msg", "invalid"))})
    return out


def _service_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    headers = {}
    if exc.retry_after is not None:
        headers["Retry-After"] = str(int(max(1, round(exc.retry_after))))
    if exc.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return problem(exc.status, exc.message, headers=headers)


def _invalid(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = field_errors(exc)
    if any(e.get("type") == "json_invalid" for e in exc.errors()):
        return problem(422, "the body is not valid JSON", errors=errors)
    listed = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return problem(422, f"invalid request: {listed}{more}", errors=errors)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
        # A body that is not UTF-8 JSON: malformed JSON is a 422 like any bad body.
        return problem(422, "the body is not valid UTF-8 JSON")
    if (exc.status_code == 404 and not request.url.path.startswith("/api/")
            and "text/html" in request.headers.get("accept", "")):
        # A browser on a path that does not exist gets the pages' HTML one.
        page = getattr(request.app.state, "not_found_page", None)
        if page is not None:
            return await run_in_threadpool(page, request)
    detail = exc.detail if isinstance(exc.detail, str) else title_of(exc.status_code)
    return problem(exc.status_code, detail, headers=dict(exc.headers or {}))


def _unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error", extra={"path": request.url.path})
    return problem(500, "the server failed on this request; it has been logged")


class BodyLimit:
    """Bodies beyond `max_bytes` get 413 as they arrive, whatever Content-Length claims, in
    the one error shape (Starlette's own limit answers plain text when the handler has not
    read the body yet)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _answer(self) -> ProblemResponse:
        return problem(413, _TooLarge(self.max_bytes).detail)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        claimed = Headers(scope=scope).get("content-length")
        if claimed is not None and claimed.isdigit() and int(claimed) > self.max_bytes:
            await self._answer()(scope, receive, send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if started:
                raise
            await self._answer()(scope, receive, send)


class _TooLarge(StarletteHTTPException):
    """Raised by the counting receive; a handler reading the body turns it into the 413
    through `_http_error`, and BodyLimit catches it where no handler did."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, f"the request body is larger than {max_bytes} bytes")


def install(app: FastAPI, *, max_body_bytes: int,
            not_found_page: Callable[[Request], Response] | None = None) -> None:
    """The handlers, the body-size limit, and the OpenAPI document saying so.
    `not_found_page`: the HTML answer to a browser asking for a path that does not exist
    (the pages'; the API never imports them)."""
    app.state.not_found_page = not_found_page
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = problem_openapi(get_openapi(
                title=app.title, version=app.version, summary=app.summary,
                description=app.description, routes=app.routes))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "An error (RFC 9457 problem details). `detail` is always a string; "
                   "validation errors (422) list each bad field under `errors`.",
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string", "description": "about:blank: the status says which error"},
        "title": {"type": "string", "description": "the status in words"},
        "status": {"type": "integer", "description": "the HTTP status code"},
        "detail": {"type": "string", "description": "what went wrong, for people"},
        "errors": {
            "type": "array", "description": "422 only: each invalid field",
            "items": {"type": "object", "required": ["field", "message"], "properties": {
                "field": {"type": "string", "description": "dotted path, e.g. code"},
                "message": {"type": "string"}}},
        },
    },
}


def problem_openapi(schema: dict[str, Any]) -> dict[str, Any]:
    """Every error response (4xx, 5xx) of the document as `application/problem+json` with the
    Problem schema, in place of FastAPI's own validation error schemas."""
    ref = {"$ref": "#/components/schemas/Problem"}
    for path in schema.get("paths", {}).values():
        for op in path.values():
            for code, response in op.get("responses", {}).items():
                if code[:1] in ("4", "5"):
                    response["content"] = {MEDIA_TYPE: {"schema": ref}}
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError", "Error"):
        components.pop(name, None)
    components["Problem"] = json.loads(json.dumps(PROBLEM_SCHEMA))
    return schema
