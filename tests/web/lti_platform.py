"""A learning platform for the LTI tests: the `lti1p3platform` package's LTI 1.3 platform
(its registration, OIDC login initiation, signed launches with deep linking, Assignment and
Grade Services, Names and Role Provisioning Services, access tokens), behind a small FastAPI
app served by uvicorn on 127.0.0.1. It keeps its course, resource links, line items and the
scores it receives in memory, for the test to read."""

from __future__ import annotations

import html
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import httpx
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request as PlatformRequest
from lti1p3platform.service_connector import (
    AssignmentsGradesService,
    NamesRoleProvisioningService,
)

from tests.web.liveserver import free_port

ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
CLIENT_ID = "tensorjudge-client"
DEPLOYMENT_ID = "deployment-1"


def pem_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@dataclass
class State:
    users: dict[str, dict[str, Any]]
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    lineitems: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    token_lifetime_s: int = 300  # negative: the platform issues expired launch tokens


class _Req(PlatformRequest):
    def build_metadata(self, request: Any) -> Any:
        return request


def _req(method: str, query: dict[str, Any], headers: Any, body: Any = None) -> _Req:
    return _Req({"method": method, "form_data": {}, "get_data": dict(query),
                 "headers": headers, "content_type": headers.get("content-type"),
                 "path": "", "json": body})


class Conf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self._registration


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> Response:
        return RedirectResponse(url, status_code=302)


class Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> Response:
        fields = "".join(f'<input type="hidden" name="{k}" value="{html.escape(str(v))}">'
                         for k, v in launch_data.items() if k != "launch_url")
        return HTMLResponse(
            f'<!doctype html><title>Launching</title><form id="f" method="post" '
            f'action="{html.escape(launch_data["launch_url"])}">{fields}</form>'
            '<script>document.getElementById("f").submit()</script>')


class Grades(AssignmentsGradesService):
    def __init__(self, state: State, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state = state

    def find_lineitems(self, page: int = 1, limit: int | None = None, line_item_id: Any = None,
                       resource_link_id: Any = None, resource_id: Any = None,
                       tag: Any = None) -> Any:
        items = [li for li in self.state.lineitems.values()
                 if resource_id is None or li.get("resourceId") == resource_id]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id: str) -> Any:
        return self.state.lineitems[line_item_id]

    def create_lineitem(self, creation_data: Any) -> Any:
        raise NotImplementedError

    def update_lineitem(self, update_data: Any) -> Any:
        raise NotImplementedError

    def delete_lineitem(self, line_item_id: str) -> None:
        raise NotImplementedError

    def update_score(self, line_item_id: str, score: Any) -> Any:
        from lti1p3platform.score import UpdateScoreStatus

        self.state.scores.setdefault(line_item_id, []).append(dict(score))
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id: str, page: int = 1, limit: int | None = None,
                    user_id: Any = None) -> Any:
        return {"content": [], "has_next": False, "next": None}


class Roster(NamesRoleProvisioningService):
    def __init__(self, state: State, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state = state

    def get_member_data_page(self, page: int = 1, limit: int | None = None,
                             role: Any = None, since: Any = None) -> Any:
        members = [{"user_id": uid, "roles": u["roles"], "name": u["name"],
                    "status": "Active"} for uid, u in self.state.users.items()]
        return {"content": members, "has_next": False, "next": None}

    def get_context_by_id(self) -> Context:
        return Context(id="course-1", label="DL101", title="Deep learning on the platform")


class Platform:
    """The platform, registered with the tool at `tool_url` (its /lti/* endpoints)."""

    def __init__(self, tool_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.private_key, self.public_key = pem_pair()
        self.state = State(users={
            "teacher": {"name": "Tess Teacher", "roles": [ROLE + "Instructor"]},
            "learner": {"name": "Lee Learner", "roles": [ROLE + "Learner"]},
            "learner2": {"name": "Lou Learner", "roles": [ROLE + "Learner"]},
        })
        self.registration = (
            Registration().set_iss(self.url).set_client_id(CLIENT_ID)
            .set_deployment_id(DEPLOYMENT_ID).set_launch_url(f"{tool_url}/lti/launch")
            .set_deeplink_launch_url(f"{tool_url}/lti/launch")
            .set_oidc_login_url(f"{tool_url}/lti/login")
            .set_tool_key_set_url(f"{tool_url}/lti/jwks")
            .set_platform_public_key(self.public_key)
            .set_platform_private_key(self.private_key))
        self.app = self._app()
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_config=None,
                                log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="lti-platform",
                                       daemon=True)

    def conf(self) -> Conf:
        return Conf(registration=self.registration)

    @property
    def kid(self) -> str:
        kid = self.registration.get_kid()
        assert kid
        return kid

    def _app(self) -> FastAPI:
        app = FastAPI()
        st = self.state

        @app.get("/start")
        def start(user: str, link: str = "", deep: bool = False) -> Response:
            """What the platform's page does when a user follows the tool's link."""
            login = Login(None, self.conf())
            login.set_lti_message_hint(hint="deep" if deep else link)
            if deep:
                login.set_deeplinking_launch_url()
            return login.initiate_login(user)

        @app.get("/authorize")
        def authorize(request: Request) -> Response:
            """The OIDC authorisation endpoint: the signed launch, posted to the tool."""
            query = dict(request.query_params)
            user = query["login_hint"]
            hint = query.get("lti_message_hint", "")
            launch = Launch(_req("GET", query, request.headers), self.conf())
            launch.set_user_data(user, st.users[user]["roles"], full_name=st.users[user]["name"])
            launch.set_launch_context_claim("course-1", context_title="Deep learning on the "
                                            "platform", context_label="DL101")
            launch.set_nrps(f"{self.url}/memberships")
            launch.set_id_token_expiration(st.token_lifetime_s)
            if hint == "deep":
                launch.set_dl(f"{self.url}/deep-link-return", title="Add tensorjudge")
            else:
                link = st.links.get(hint, {"custom": {}, "lineitem": None})
                launch.set_resource_link_claim(hint or "unlinked", title="tensorjudge")
                launch.set_custom_parameters_claim(link["custom"])
                lineitem = link["lineitem"]
                launch.set_ags(f"{self.url}/lineitems",
                               f"{self.url}/lineitems/{lineitem}" if lineitem else None)
            return launch.lti_launch()

        @app.post("/deep-link-return")
        async def deep_link_return(request: Request) -> Response:
            form = dict(parse_qsl((await request.body()).decode()))
            items = self.conf().validate_deeplinking_resp(form)
            for item in items:
                n = len(st.links) + 1
                lineitem = None
                if item.get("lineItem"):
                    lineitem = str(n)
                    st.lineitems[lineitem] = {"id": f"{self.url}/lineitems/{lineitem}",
                                              **item["lineItem"],
                                              "resourceLinkId": f"link-{n}"}
                st.links[f"link-{n}"] = {"title": item.get("title"), "url": item.get("url"),
                                         "custom": item.get("custom") or {},
                                         "lineitem": lineitem}
            titles = ", ".join(str(i.get("title")) for i in items)
            return HTMLResponse(f"<!doctype html><title>Linked</title><h1>Linked: "
                                f"{html.escape(titles)}</h1>")

        @app.get("/jwks")
        def jwks() -> JSONResponse:
            conf = self.conf()
            conf.get_registration()
            return JSONResponse(conf.get_jwks())

        @app.post("/token")
        async def token(request: Request) -> JSONResponse:
            form = dict(parse_qsl((await request.body()).decode()))
            return JSONResponse(self.conf().get_access_token(form))

        def answer(resp: Any) -> Response:
            if resp.result is None:
                return Response(status_code=resp.code)
            return JSONResponse(resp.result, status_code=resp.code, media_type=resp.media_type)

        def grades(request: Request, body: Any = None) -> Grades:
            return Grades(st, _req(request.method, dict(request.query_params), request.headers,
                                   body), self.conf(), f"{self.url}/lineitems")

        @app.get("/lineitems")
        def lineitems(request: Request) -> Response:
            return answer(grades(request).handle_resp(grades(request).handle_get_lineitems))

        @app.get("/lineitems/{item}")
        def lineitem(item: str, request: Request) -> Response:
            g = grades(request)
            return answer(g.handle_resp(g.handle_get_lineitem, line_item_id=item))

        @app.post("/lineitems/{item}/scores")
        async def scores(item: str, request: Request) -> Response:
            g = grades(request, await request.json())
            return answer(g.handle_resp(g.handle_update_score, line_item_id=item))

        @app.get("/memberships")
        def memberships(request: Request) -> Response:
            r = Roster(st, _req("GET", dict(request.query_params), request.headers),
                       self.conf(), f"{self.url}/memberships")
            return answer(r.handle_resp(r.handle_get_members))

        return app

    def start(self) -> Platform:
        self.thread.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/jwks", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the platform did not start")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
