"""The pages in a real headless Chromium (Debian's), driven by Playwright, against a real
server with a real judge: sign up, type a solution, Run, Submit, see the verdicts arrive live,
the wrong-answer heatmap, the math of every statement, the editor taking text as it is,
phone width, keyboard, and the page without JavaScript. Screenshots: artifacts/screenshots/.
"""

from __future__ import annotations

import re
import secrets

import pytest

from tests.web.conftest import shot

pytestmark = pytest.mark.browser

PASSWORD = "correct horse battery"
AC_CODE = "import numpy as np\n\ndef double(x):\n    return (2 * np.asarray(x)).reshape(-1)\n"
WA_CODE = "def double(x):\n    return x + 1\n"
JUDGED = 30_000  # ms: a verdict of the fixture problem takes well under a second


def sign_up(page, name: str | None = None) -> str:
    name = name or f"user{secrets.token_hex(3)}"
    page.goto("/")
    page.get_by_role("link", name="Sign up").click()
    expect_title(page, "Sign up · tensorjudge")
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(re.compile(r"/$"))
    assert page.get_by_role("button", name="Sign out").is_visible()
    return name


def expect_title(page, title: str) -> None:
    """A click on a link returns before the next page has loaded: its title is waited for."""
    from playwright.sync_api import expect

    expect(page).to_have_title(title)


def open_problem(page, slug: str = "double") -> None:
    page.goto(f"/problems/{slug}")
    page.wait_for_selector(".cm-editor .cm-content")


def editor_text(page) -> str:
    return page.evaluate("() => document.getElementById('editor').tjEditor.getValue()")


def replace_code(page, code: str) -> None:
    """Select all in the editor and type the code key by key, as a person would."""
    page.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.type(code)
    assert editor_text(page) == code


def verdict(page) -> str:
    """Wait for the live panel to reach a verdict, and return it in words."""
    page.wait_for_selector('#verdict .result[data-status="done"]', timeout=JUDGED)
    return page.locator("#verdict .verdict.big").inner_text().strip()


def test_sign_up_run_and_submit_accepted(new_page):
    page = new_page()
    sign_up(page)
    shot(page, "01-problem-list")
    page.get_by_role("link", name="Double it").click()
    page.wait_for_selector(".cm-editor .cm-content")
    assert page.title() == "Double it · tensorjudge"
    replace_code(page, AC_CODE)

    page.get_by_role("button", name="Run samples").click()
    # The status goes queued/running before the verdict: the panel appears at once.
    page.wait_for_selector("#verdict .result", timeout=5_000)
    assert verdict(page) == "Accepted"
    assert "Run on the sample tests" in page.locator("#verdict").inner_text()
    assert page.locator("#verdict .test-table tbody.test").count() == 1
    shot(page, "02-run-accepted", full_page=False)

    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector('#verdict .result[data-status="done"] >> text=Submission, all tests',
                           timeout=JUDGED)
    assert verdict(page) == "Accepted"
    assert "3/3 tests passed" in page.locator("#verdict").inner_text()
    # An accept unlocks the reference solution, on this page.
    page.get_by_text("View solution").click()
    assert "reshape(-1)" in page.locator("#solution pre").inner_text()
    shot(page, "03-submit-accepted", full_page=False)

    # The editor keeps the code in the browser between visits.
    page.reload()
    page.wait_for_selector(".cm-editor .cm-content")
    assert editor_text(page) == AC_CODE
    page.goto("/")
    assert page.get_by_role("img", name="Solved").count() == 1
    assert "100%" in page.locator("table").inner_text()


def test_wrong_answer_shows_the_heatmap(new_page):
    page = new_page()
    sign_up(page)
    open_problem(page)
    replace_code(page, WA_CODE)
    page.get_by_role("button", name="Submit").click()
    assert verdict(page) == "Wrong Answer"
    heat = page.get_by_role("img", name=re.compile("heatmap", re.I))
    heat.scroll_into_view_if_needed()
    assert heat.is_visible()
    label = heat.get_attribute("aria-label")
    assert re.search(r"the worst element is at \[\d+, \d+\] \(got [-\d.e]+, want [-\d.e]+\)",
                     label), label
    assert page.locator("#verdict .largest-table").is_visible()  # the text alternative
    shot(page, "04-wrong-answer-live", full_page=False)

    # The submission page: per-test table, messages, the picture again.
    page.locator("#verdict").get_by_role("link", name=re.compile(r"^#\d+$")).click()
    page.wait_for_selector(".result")
    assert re.fullmatch(r"Submission #\d+ · tensorjudge", page.title())
    rows = page.locator(".test-table tbody.test")
    assert rows.count() == 3
    assert rows.first.locator(".verdict").inner_text() == "Wrong Answer"
    assert "values differ" in rows.first.inner_text()
    assert page.get_by_role("img", name=re.compile("heatmap", re.I)).is_visible()
    shot(page, "05-submission-wrong-answer")


def test_runtime_error_shows_the_traceback(new_page):
    page = new_page()
    sign_up(page)
    open_problem(page)
    replace_code(page, "def double(x):\n    return undefined_name * x\n")
    page.get_by_role("button", name="Run samples").click()
    assert verdict(page) == "Runtime Error"
    assert "NameError" in page.locator("#verdict .traceback").inner_text()
    shot(page, "06-runtime-error", full_page=False)


def test_paste_is_inserted_verbatim(new_page):
    page = new_page(clipboard=True)
    sign_up(page)
    open_problem(page)
    snippet = ("import numpy as np\n\n\ndef double(x):\n    if x.ndim:\n        y = 2 * x\n"
               "    else:\n            y = x + x  # odd indentation, kept\n"
               "    return y.reshape(-1)\n\n\t# a tab, kept\n")
    page.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.evaluate("text => navigator.clipboard.writeText(text)", snippet)
    page.keyboard.press("Control+V")
    page.wait_for_function("n => document.getElementById('editor').tjEditor.getValue()"
                           ".length === n", arg=len(snippet))
    assert editor_text(page) == snippet
    # Typing Enter after an indented line adds no indentation of its own (auto-indent is
    # off by default; the toolbar turns it on).
    page.keyboard.press("Control+End")
    page.keyboard.type("\nz = 1")
    assert editor_text(page).endswith("# a tab, kept\n\nz = 1")


def test_every_statement_renders_its_math(new_page, live_server):
    page = new_page()
    # The samples of the bundled problems run their (slow) references: not needed here.
    page.route(re.compile(r".*/problems/[^/]+/samples$"), lambda route: route.fulfill(
        status=200, content_type="text/html",
        body='<p class="muted">(samples not computed in this test)</p>'))
    page.goto("/")
    slugs = [a.get_attribute("href").rsplit("/", 1)[1]
             for a in page.locator(".problem-table .col-title a").all()]
    assert "double" in slugs and len(slugs) >= 5
    for slug in slugs:
        page.goto(f"/problems/{slug}")
        page.wait_for_function(
            "() => document.querySelectorAll('.math').length > 0 && "
            "document.querySelectorAll('.math:not(.rendered)').length === 0")
        assert page.locator(".katex-error").count() == 0
        assert page.locator(".statement .katex").count() == page.locator(
            ".statement .math").count()
        text = page.locator("main").inner_text()
        assert "$" not in text, f"raw $ on {slug}: " + text[max(0, text.find("$") - 60):][:120]
        assert page.title().endswith(" · tensorjudge")
        shot(page, f"10-statement-{slug}")


OVERFLOW_JS = """() => {
  const w = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('body *')].filter(el => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > w + 1;
  }).slice(0, 5).map(el => el.tagName.toLowerCase() + '.' + el.className);
  return [document.documentElement.scrollWidth - w, wide];
}"""


def assert_fits(page) -> None:
    extra, wide = page.evaluate(OVERFLOW_JS)
    assert extra <= 1, f"the page is {extra}px wider than the phone: {wide}"


def test_phone_width(new_page):
    page = new_page(width=390, height=844)
    sign_up(page)
    assert_fits(page)
    shot(page, "20-phone-problem-list", full_page=False)
    open_problem(page)
    assert_fits(page)
    page.goto("/problems/encoder-decoder")
    page.wait_for_selector(".statement .katex")
    assert_fits(page)
    shot(page, "21-phone-statement", full_page=False)
    open_problem(page)
    replace_code(page, WA_CODE)
    page.get_by_role("button", name="Submit").click()
    assert verdict(page) == "Wrong Answer"
    page.locator("#verdict").scroll_into_view_if_needed()
    assert_fits(page)
    shot(page, "22-phone-wrong-answer", full_page=False)


def test_keyboard_only(new_page):
    page = new_page()
    page.goto("/")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.id") == "main"
    # Sign up with the keyboard alone.
    page.goto("/signup")
    name = f"kb{secrets.token_hex(3)}"
    page.keyboard.type(name)  # the username field has the focus
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "password"
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/$"))
    open_problem(page)
    # Into the editor and out again: Escape then Tab leaves it, and Tab reaches Run.
    page.locator(".cm-content").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type(AC_CODE)
    page.keyboard.press("Escape")
    for _ in range(6):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "run-button":
            break
    assert page.evaluate("() => document.activeElement.id") == "run-button"
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"  # the focus is visible
    page.keyboard.press("Enter")
    assert verdict(page) == "Accepted"
    shot(page, "30-keyboard-run", full_page=False)


def test_without_javascript(new_page):
    page = new_page(javascript=False)
    sign_up(page)
    page.goto("/problems/double")
    textarea = page.locator("textarea#code")
    assert textarea.is_visible()
    assert "def double(x):" in textarea.input_value()  # the starter
    textarea.fill(AC_CODE)
    shot(page, "40-nojs-problem", full_page=False)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(re.compile(r"/submissions/\d+$"))
    # The page reloads itself until the verdict is there.
    page.wait_for_selector('.result[data-status="done"]', timeout=JUDGED)
    assert page.locator(".verdict.big").inner_text().strip() == "Accepted"
    shot(page, "41-nojs-submission")


def test_leaderboard_and_my_submissions(new_page):
    page = new_page()
    name = sign_up(page)
    open_problem(page)
    replace_code(page, AC_CODE)
    page.get_by_role("button", name="Submit").click()
    assert verdict(page) == "Accepted"
    page.get_by_role("link", name="Leaderboard").click()
    expect_title(page, "Leaderboard · tensorjudge")
    assert name in page.locator("table").inner_text()
    shot(page, "50-leaderboard")
    page.get_by_role("link", name="My submissions").click()
    expect_title(page, "My submissions · tensorjudge")
    assert "Accepted" in page.locator("table").inner_text()
    shot(page, "51-my-submissions")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(re.compile(r"/$"))
    assert page.get_by_role("link", name="Sign in").is_visible()


SLOW_AC = ("import time\n\ndef double(x):\n    time.sleep(0.6)\n"
           "    return (2 * x).reshape(-1)\n")


def test_tests_arrive_one_by_one(new_page):
    """While the submission is still being judged, the tests already judged show their
    verdicts: no reload, no waiting for the end."""
    page = new_page()
    sign_up(page)
    open_problem(page)
    replace_code(page, SLOW_AC)
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector('#verdict .result[data-status="running"] .test-table '
                           ':text("Accepted")', timeout=JUDGED)
    panel = page.locator("#verdict").inner_text()
    assert "Running" in panel  # later tests still pending
    shot(page, "07-live-progress", full_page=False)
    assert verdict(page) == "Accepted"
