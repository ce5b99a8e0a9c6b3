"""Laptop and phone widths in a real Chromium (issue 27): on every problem page at 1366x768
and 390x844 no statement equation, table or code box is wider than its column (equations are
set smaller to fit, what still does not fit scrolls inside its own box and is marked), and a
wrong answer's verdict table keeps every column inside its panel. And the live page: the head
(solved mark, attempts) changes when a verdict arrives; the starter switcher."""

from __future__ import annotations

import re

import pytest

from tests.app.tj_testlib import DOUBLE, copy_package
from tests.web.conftest import shot
from tests.web.test_browser import JUDGED, WA_CODE, open_problem, replace_code, sign_up, verdict

pytestmark = pytest.mark.browser

SIZES = [(1366, 768), (390, 844)]
SLUGS = ["double", "encoder-block", "decoder-block-preln", "decoder-block", "encoder-decoder"]
AC_CODE = "import numpy as np\n\ndef double(x):\n    return (2 * np.asarray(x)).reshape(-1)\n"

# Each box of the statement column against the column; a box whose content is wider must
# scroll (overflow-x auto) and be marked so the hidden side fades. Answers what is wrong.
STATEMENT_BOXES_JS = """() => {
  const col = document.querySelector('.statement-column').getBoundingClientRect();
  const sel = '#statement .math-display, #statement .table-scroll, #statement pre, ' +
              '.signature-box, .samples .table-scroll, .downloads pre';
  const wrong = [];
  let scaled = 0;
  for (const el of document.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect();
    const name = el.className + ' ' + el.textContent.slice(0, 40);
    if (r.width === 0) continue;
    if (r.left < col.left - 1 || r.right > col.right + 1)
      wrong.push(`${name}: [${r.left}, ${r.right}] outside the column [${col.left}, ${col.right}]`);
    const over = el.scrollWidth > el.clientWidth + 1;
    if (over && getComputedStyle(el).overflowX !== 'auto')
      wrong.push(`${name}: wider than its box, which does not scroll`);
    if (over && !el.classList.contains('has-overflow'))
      wrong.push(`${name}: scrolls with no cue`);
    if (el.classList.contains('math-display') && el.style.fontSize) scaled++;
    if (el.classList.contains('math-display') && over && el.style.fontSize !== '60%')
      wrong.push(`${name}: scrolls before it is set as small as allowed`);
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    wrong.push(`the page scrolls sideways: ${document.documentElement.scrollWidth}`);
  return {wrong, scaled, displays: document.querySelectorAll('#statement .math-display').length};
}"""

VERDICT_TABLE_JS = """() => {
  const panel = document.querySelector('#verdict .result').getBoundingClientRect();
  const wrong = [];
  const cells = document.querySelectorAll('#verdict .test-table th, #verdict .test-table td');
  for (const cell of cells) {
    const r = cell.getBoundingClientRect();
    if (r.width < 2 || getComputedStyle(cell).display === 'none') continue;
    if (cell.closest('thead') && cell.closest('thead').getBoundingClientRect().width < 2) continue;
    if (r.left < panel.left - 1 || r.right > panel.right + 1)
      wrong.push(`${cell.textContent.trim().slice(0, 30)}: [${r.left}, ${r.right}] ` +
                 `outside [${panel.left}, ${panel.right}]`);
  }
  const box = document.querySelector('#verdict .test-table').closest('.table-scroll');
  if (box.scrollWidth > box.clientWidth + 1) wrong.push('the verdict table scrolls sideways');
  const message = document.querySelector('#verdict .message-row .message');
  const first = document.querySelector('#verdict tbody.test tr').getBoundingClientRect();
  if (message && message.getBoundingClientRect().top < first.bottom - 1)
    wrong.push('the message is not under its row');
  return wrong;
}"""


def settle(page) -> None:
    """KaTeX has rendered, the web fonts are in, and the page has fitted its boxes."""
    page.wait_for_function("() => !document.querySelector('.math:not(.rendered)')")
    page.evaluate("() => document.fonts.ready.then(() => true)")
    page.wait_for_selector(".sample-list", timeout=180_000)  # the reference runs once
    page.wait_for_timeout(300)


@pytest.mark.parametrize(("width", "height"), SIZES, ids=lambda v: str(v))
def test_every_statement_fits_its_column(new_page, width, height):
    page = new_page(width=width, height=height)
    for slug in SLUGS:
        page.goto(f"/problems/{slug}")
        settle(page)
        found = page.evaluate(STATEMENT_BOXES_JS)
        assert found["wrong"] == [], (slug, width, found["wrong"])
        shot(page, f"layout-{slug}-{width}")
        # Page after page the equations stay readable: most need no scaling at all.
        assert found["scaled"] <= found["displays"]


# Test names as long as a package may make them (64 characters): unbreakable words that
# must not push the figures out of the panel.
LONG_NAMES = {"sample-1": "sample-" + "x" * 57, "hidden-1": "hidden-with-a-long-name-" + "y" * 40}


@pytest.fixture(scope="module")
def long_names(live_server, tmp_path_factory) -> str:
    from app.services import problems

    pkg = copy_package(DOUBLE, tmp_path_factory.mktemp("pkg"), "double-long-names")
    toml = (pkg / "problem.toml").read_text()
    for short, long in LONG_NAMES.items():
        toml = toml.replace(f'name = "{short}"', f'name = "{long}"')
    (pkg / "problem.toml").write_text(toml)
    problems.store(live_server.ctx, pkg, mode="ensure", validator=None)
    return "double-long-names"


@pytest.mark.parametrize(("width", "height"), SIZES, ids=lambda v: str(v))
def test_wrong_answer_panel_keeps_every_column(new_page, long_names, width, height):
    page = new_page(width=width, height=height)
    sign_up(page)
    open_problem(page, long_names)
    replace_code(page, WA_CODE)
    page.get_by_role("button", name="Submit").click()
    assert verdict(page) == "Wrong Answer"
    page.wait_for_timeout(200)
    assert page.evaluate(VERDICT_TABLE_JS) == []
    heads = page.locator("#verdict .test-table thead th")
    if width > 640:  # on a phone the table is one card per test, its headings as labels
        for name in ("Max rel error", "Wrong elements"):
            assert heads.filter(has_text=name).is_visible()
    else:
        assert page.locator('#verdict td[data-label="Wrong elements"]').first.is_visible()
    page.locator("#verdict .test-table").scroll_into_view_if_needed()
    shot(page, f"layout-wrong-answer-{width}", full_page=False)


def test_the_head_follows_the_verdict_without_a_reload(new_page):
    page = new_page(width=1366, height=768)
    sign_up(page)
    open_problem(page)
    head = page.locator("#problem-head")
    assert "Your attempts: 0 submits, 0 runs" in head.inner_text()
    assert page.locator("#recent").is_hidden()
    replace_code(page, AC_CODE)
    page.get_by_role("button", name="Submit").click()
    assert verdict(page) == "Accepted"
    page.wait_for_selector("#problem-head .solved-badge", timeout=JUDGED)
    text = page.locator("#problem-head").inner_text()
    assert "Your attempts: 1 submit, 0 runs" in text and "Acceptance" in text
    assert "No submissions yet" not in text
    assert page.locator("#recent").is_visible()
    assert page.locator("#recent .verdict").first.inner_text() == "Accepted"


def test_the_starter_switcher(new_page):
    page = new_page(width=1366, height=768)
    sign_up(page)
    open_problem(page, "decoder-block")
    text = page.evaluate("() => document.getElementById('editor').tjEditor.getValue()")
    assert "import numpy as np" in text and "NotImplementedError(" in text
    page.get_by_label("Starter").select_option(label="PyTorch")
    text = page.evaluate("() => document.getElementById('editor').tjEditor.getValue()")
    assert text.startswith("import torch") and "NotImplementedError(" in text
    # The choice is kept for the next visit.
    page.wait_for_timeout(500)  # the editor saves its text a moment after a change
    page.reload()
    page.wait_for_selector(".cm-editor .cm-content")
    assert page.get_by_label("Starter").input_value() == "torch"
    assert re.search(r"^import torch", page.evaluate(
        "() => document.getElementById('editor').tjEditor.getValue()"))
