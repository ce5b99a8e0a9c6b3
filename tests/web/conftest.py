"""Fixtures of the page tests.

- The page tests (TestClient) reuse the service tests' fixtures: every database test runs on
  SQLite and on PostgreSQL (see tests/app/conftest.py).
- The browser tests (`-m browser`) start one real server (uvicorn in a thread, an embedded
  judge worker with the real sandbox, a temporary SQLite database, the `double` fixture and
  the bundled problems) and drive Debian's Chromium through Playwright. Screenshots are kept
  under artifacts/screenshots/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.settings import REPO_ROOT
from tests.app.conftest import (  # noqa: F401 - fixtures, found by name
    admin,
    alice,
    base_ctx,
    bob,
    client,
    configure,
    ctx,
    pg_url,
    session_dirs,
    sqlite_url,
    workers,
)
from tests.app.tj_testlib import PASSWORD

CHROMIUM = Path(os.environ.get("TENSORJUDGE_TEST_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = REPO_ROOT / "artifacts" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic", "--disable-dev-shm-usage"]


# --- page tests ----------------------------------------------------------------------------

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    m = CSRF_RE.search(html)
    assert m, "the page has no CSRF field"
    return m.group(1)


class Browserish:
    """A TestClient used like a browser: it keeps the session cookie and reads the CSRF
    token from the last page it loaded."""

    def __init__(self, http: TestClient):
        self.client = http
        self.csrf = ""

    def get(self, url: str, **kw: Any):
        r = self.client.get(url, headers={"accept": "text/html", **kw.pop("headers", {})}, **kw)
        m = CSRF_RE.search(r.text)
        if m:
            self.csrf = m.group(1)
        return r

    def post(self, url: str, data: dict[str, str], *, json: bool = False, **kw: Any):
        headers = {"accept": "application/json" if json else "text/html",
                   **kw.pop("headers", {})}
        body = {"csrf": self.csrf, **data}
        return self.client.post(url, data=body, headers=headers, follow_redirects=False, **kw)

    def sign_up(self, username: str, password: str = PASSWORD):
        self.get("/signup")
        r = self.post("/signup", {"username": username, "password": password})
        assert r.status_code == 303, r.text
        return r


@pytest.fixture
def web(client: TestClient) -> Browserish:  # noqa: F811 - the fixture imported above
    return Browserish(client)


# --- browser tests ---------------------------------------------------------------------------


def _browser_unavailable() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed (./dev setup installs it)"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (./dev setup installs Debian's chromium)"
    return None


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    why = _browser_unavailable()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    from tests.web.liveserver import LiveServer

    server = LiveServer(tmp_path_factory.mktemp("live")).start()
    yield server
    server.stop()


def require_browser() -> None:
    """Skip without Chromium or Playwright (fail under CI)."""
    why = _browser_unavailable()
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """The one Chromium of the worker process (Playwright's sync API allows one at a time),
    for whichever server a test drives."""
    require_browser()
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def browser(live_server: Any, chromium: Any) -> Any:
    return chromium


@pytest.fixture
def new_page(browser: Any, live_server: Any) -> Iterator[Any]:
    """Pages in fresh browser contexts (no cookies, empty localStorage); JavaScript errors
    and console errors (a missing asset, a Content-Security-Policy refusal) fail the test."""
    contexts: list[Any] = []
    errors: list[str] = []

    def make(*, width: int = 1440, height: int = 900, javascript: bool = True,
             clipboard: bool = False) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height},
                                      java_script_enabled=javascript, base_url=live_server.url,
                                      permissions=["clipboard-read", "clipboard-write"]
                                      if clipboard else [])
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(f"console: {m.text}")
                if m.type == "error" else None)
        return page

    yield make
    for c in contexts:
        c.close()
    assert not errors, f"errors in the browser: {errors}"


def shot(page: Any, name: str, *, full_page: bool = True) -> Path:
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
