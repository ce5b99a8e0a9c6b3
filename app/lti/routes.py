"""The LTI 1.3 endpoints: /lti/login (the OIDC third-party login the platform starts),
/lti/launch (the platform's signed launch), /lti/deep-link (the picker's answer, sent back to
the platform), /lti/jwks (this tool's public keys) and /lti/config (the URLs to register)."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException, OIDCException
from pylti1p3.lineitem import LineItem
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from app.context import Context
from app.db.models import Course, LtiUser
from app.lti import launches, registrations
from app.lti.adapter import FastApiMessageLaunch, FastApiOIDCLogin, FastApiRequest
from app.services import assignments, courses, problems, users
from app.services.errors import ServiceError
from app.services.sessions import Session
from app.services.users import UserView
from app.web import session as web_session
from app.web.routes import ctx_of, error_page, render

router = APIRouter(include_in_schema=False)

# pylti1p3's messages, in words a person launching from the platform can act on.
REFUSALS = (
    ("Signature has expired", "its token has expired (a launch token is good for a few "
     "minutes): start it again from the learning platform"),
    ("Signature verification failed", "its token's signature does not verify with the "
     "platform's published key: the platform did not issue it"),
    ("Unable to find public key", "its token is signed with a key the platform does not "
     "publish: it was forged, or the platform's keys changed"),
    ("State not found", "it did not begin with a login here (no matching state): start it "
     "again from the learning platform"),
    ("Missing state", "it did not begin with a login here (no state): start it again from "
     "the learning platform"),
    ("Invalid Nonce", "its token was used already, or was not issued for this login"),
    ("Registration not found", "no learning platform is registered here with its issuer "
     "and client id"),
    ("Client id not registered", "no learning platform is registered here with its issuer "
     "and client id"),
    ("Unable to find deployment", "its deployment of this tool is not registered here"),
    ("JWT must contain 3 parts", "its token is not a signed token (JWT)"),
    ("can't be decoded", "its token is not a signed token (JWT)"),
    ("Missing id_token", "it carries no token"),
    ("Could not find registration", "no learning platform is registered here with its "
     "issuer and client id"),
)


def refusal(e: Exception) -> str:
    text = str(e)
    for needle, words in REFUSALS:
        if needle.lower() in text.lower():
            return words
    return text or type(e).__name__


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


async def _params(request: Request) -> dict[str, str]:
    params = {k: v for k, v in request.query_params.items()}
    if request.method == "POST":
        form = await request.form()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
    return params


def _lti_request(request: Request, params: dict[str, str]) -> FastApiRequest:
    return FastApiRequest(params, request.cookies, secure=_secure(request))


@router.api_route("/lti/login", methods=["GET", "POST"])
async def login(request: Request) -> Response:
    """OIDC third-party login: back to the platform's authorisation endpoint, with a state
    (in a cookie) and a nonce (kept here) the launch must carry."""
    params = await _params(request)
    ctx = ctx_of(request)
    launch_url = f"{_base(request)}/lti/launch"
    target = params.get("target_link_uri") or ""
    if urlsplit(target).netloc == urlsplit(launch_url).netloc:
        launch_url = target

    def run() -> Response:
        oidc = FastApiOIDCLogin(_lti_request(request, params),
                                registrations.DbToolConf(ctx), ctx)
        return oidc.redirect(launch_url)

    try:
        return await run_in_threadpool(run)
    except (OIDCException, LtiException) as e:
        return error_page(request, 400, "Login refused",
                          f"The login from the learning platform was refused: {refusal(e)}.")


@router.post("/lti/launch")
async def launch(request: Request) -> Response:
    """The platform's launch: its token checked (signature against the platform's keys,
    expiry, the nonce of our login, registration and deployment), then the user signed in
    and sent to the assignment (or, for a deep-linking request, to the picker)."""
    params = await _params(request)
    ctx = ctx_of(request)
    return await run_in_threadpool(_launch, request, ctx, params)


def _launch(request: Request, ctx: Context, params: dict[str, str]) -> Response:
    conf = registrations.DbToolConf(ctx)
    msg = FastApiMessageLaunch(_lti_request(request, params), conf, ctx)
    try:
        body: dict[str, Any] = dict(msg.get_launch_data())
    except LtiException as e:
        return error_page(request, 401, "Launch refused",
                          f"The launch was refused: {refusal(e)}.")
    assert conf.found is not None
    try:
        done = launches.accept(ctx, conf.found.id, body)
    except ServiceError as e:
        return error_page(request, e.status, "Launch refused",
                          f"The launch was refused: {e.message}.")
    token = users.issue_token(ctx, done.user)
    web_session.replace(request, Session(csrf=secrets.token_urlsafe(24), token=token),
                        done.user)
    if done.deep_link:
        return _picker(request, ctx, done, msg.get_launch_id())
    where = (f"/assignments/{done.assignment_id}" if done.assignment_id
             else f"/courses/{done.course_id}")
    return web_session.apply_cookie(request, RedirectResponse(where, status_code=303))


def _picker(request: Request, ctx: Context, done: launches.Launched, launch_id: str,
            error: str | None = None) -> Response:
    return render(request, "lti_deep_link.html", 400 if error else 200, launch_id=launch_id,
                  course=courses.get_course(ctx, done.user, done.course_id),
                  rows=assignments.list_for_course(ctx, done.user, done.course_id),
                  catalogue=problems.list_problems(ctx), error=error)


@router.post("/lti/deep-link")
async def deep_link(request: Request) -> Response:
    """The staff member's pick, sent back to the platform as a signed deep-linking response:
    a resource link that opens the assignment (a new one for a problem), with a line item for
    its grades."""
    params = await _params(request)
    return await run_in_threadpool(_deep_link, request, ctx_of(request), params)


def _deep_link(request: Request, ctx: Context, params: dict[str, str]) -> Response:
    user = web_session.state(request).user
    try:
        web_session.check_form(request, params.get("csrf"))
        if user is None:
            raise LtiException("Launch data not found")
        conf = registrations.DbToolConf(ctx)
        msg = FastApiMessageLaunch.restore(params.get("launch_id", ""),
                                           _lti_request(request, params), conf, ctx)
        body: dict[str, Any] = dict(msg.get_launch_data())
        assert conf.found is not None
        course_id = _launch_course(ctx, conf.found.id, body, user.id)
        aid = _chosen(ctx, user, course_id, params.get("choice", ""))
        a = assignments.get(ctx, user, aid)
    except (LtiException, ServiceError) as e:
        words = e.message if isinstance(e, ServiceError) else refusal(e)
        return error_page(request, 400, "Not linked", f"Nothing was linked: {words}.")
    resource = (DeepLinkResource().set_url(f"{_base(request)}/lti/launch").set_title(a.title)
                .set_custom_params({launches.ASSIGNMENT_PARAM: str(a.id)}).set_target("window")
                .set_lineitem(LineItem().set_score_maximum(a.max_points).set_label(a.title)
                              .set_resource_id(f"tensorjudge-assignment-{a.id}")))
    dl = msg.get_deep_link()
    return_url = str((body.get("https://purl.imsglobal.org/spec/lti-dl/claim/"
                               "deep_linking_settings") or {}).get("deep_link_return_url", ""))
    response = render(request, "lti_return.html", return_url=return_url,
                      jwt=dl.get_response_jwt([resource]), title=a.title)
    # The form goes to the platform: its origin joins this page's allowed form actions.
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(return_url))
    csp = response.headers["Content-Security-Policy"]
    response.headers["Content-Security-Policy"] = csp.replace(
        "form-action 'self'", f"form-action 'self' {origin}")
    return response


def _launch_course(ctx: Context, registration_id: int, body: dict[str, Any],
                   user_id: int) -> int:
    """The course of a restored launch, for the user it signed in (no one else's)."""
    with ctx.db.transaction() as s:
        subject = s.scalar(select(LtiUser.subject).where(
            LtiUser.registration_id == registration_id, LtiUser.user_id == user_id))
        context_id = str((body.get(launches.CONTEXT) or {}).get("id") or "")
        course_id = s.scalar(select(Course.id).where(
            Course.lti_registration_id == registration_id,
            Course.lti_context_id == context_id))
    if subject != str(body.get("sub")) or course_id is None:
        raise LtiException("Launch data not found")
    return course_id


def _chosen(ctx: Context, user: UserView, course_id: int, choice: str) -> int:
    """An existing assignment (`assignment:ID`), or a new one-problem assignment of the
    course (`problem:SLUG`: open now, due in a week, 100 points, full feedback)."""
    kind, _, value = choice.partition(":")
    if kind == "assignment" and value.isdigit():
        a = assignments.get(ctx, user, int(value))
        if a.course_id != course_id:
            raise LtiException("Launch data not found")
        return a.id
    if kind == "problem" and value:
        now = datetime.now(UTC)
        title = problems.get_problem(ctx, value)["title"]
        spec = assignments.AssignmentSpec(title, (assignments.ProblemPoints(value, 100.0),),
                                          now, now + timedelta(days=7))
        return assignments.create(ctx, user, course_id, spec).id
    raise LtiException("pick an assignment or a problem")


@router.get("/lti/jwks")
def jwks(request: Request) -> JSONResponse:
    """This tool's public keys (the platform checks the tool's signed messages with them)."""
    return JSONResponse(registrations.jwks(ctx_of(request)))


@router.get("/lti/config")
def config(request: Request) -> JSONResponse:
    """What a platform's administrator enters when registering this tool."""
    base = _base(request)
    return JSONResponse({"login_url": f"{base}/lti/login", "launch_url": f"{base}/lti/launch",
                         "deep_link_url": f"{base}/lti/launch", "jwks_url": f"{base}/lti/jwks",
                         "custom_parameter": launches.ASSIGNMENT_PARAM})



