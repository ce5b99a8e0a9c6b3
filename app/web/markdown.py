"""Problem statements: Markdown to HTML on the server, math left for KaTeX in the browser.

`$...$` and `$$...$$` spans are parsed by markdown-it's dollarmath plugin, so Markdown never
touches the TeX inside them (no emphasis from `_`, no escapes eaten), and come out as
`<span class="math math-inline">` / `<div class="math math-display">` holding the escaped TeX
source, which the vendored KaTeX renders in place (`static/app.js`). Code spans and blocks
keep their `$` as they are. Statements are written by staff, but raw HTML is still off.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin


def _math(display: bool, block: bool):  # noqa: ANN202
    tag = "div" if block else "span"
    kind = "math-display" if display else "math-inline"

    def rule(self, tokens, idx, _options, _env) -> str:  # noqa: ANN001
        content = escape(tokens[idx].content.strip())
        return f'<{tag} class="math {kind}">{content}</{tag}>' + ("\n" if block else "")

    return rule


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.use(dollarmath_plugin, allow_labels=False, allow_space=True, allow_digits=True,
           allow_blank_lines=False, double_inline=True)
    # Inline math stays a <span> (even `$$...$$` inside a paragraph, shown as a display
    # formula), so paragraphs are never broken by a <div>.
    md.add_render_rule("math_inline", _math(display=False, block=False))
    md.add_render_rule("math_inline_double", _math(display=True, block=False))
    md.add_render_rule("math_block", _math(display=True, block=True))
    return md


@lru_cache(maxsize=64)
def render_statement(source: str) -> str:
    """The statement as HTML (cached: statements are immutable per version)."""
    html = _md().render(source)
    # Tables scroll sideways on narrow screens instead of widening the page.
    return (html.replace("<table>", '<div class="table-scroll"><table>')
            .replace("</table>", "</table></div>"))


def strip_title(source: str, title: str) -> str:
    """Drop a leading `# Title` line that repeats the page's own heading."""
    lines = source.lstrip().splitlines()
    if lines and lines[0].startswith("# "):
        return "\n".join(lines[1:]).lstrip("\n")
    return source
