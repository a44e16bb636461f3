"""Agent-written Markdown is rendered sanitised: hostile payloads come out inert."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from tests.console.scenarios import HOSTILE_NOTES
from workrail.console.markdown import ALLOWED_TAGS, render_markdown

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>',
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](java\tscript:alert(1))",
    "[x](&#106;avascript:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![x](javascript:alert(1))",
    "![x](https://tracker.example/pixel.png)",
    '<iframe src="https://evil.example"></iframe>',
    "<svg onload=alert(1)>",
    "<style>body{display:none}</style>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<form action=https://evil.example><input name=a></form>",
    "<details open ontoggle=alert(1)>",
    '[x](https://ok.example "a" onmouseover="alert(1)")',
    "<!-- <script>alert(1)</script> -->",
    "```html\n<script>alert(1)</script>\n```",
    "<<script>script>alert(1)<</script>/script>",
    '<a href="x" onclick="alert(1)">x</a>',
    "[x]: javascript:alert(1)\n\n[link][x]",
    "[x](//evil.example/path)",
    "[x](/\\evil.example)",
    "[x](/sessions/sess_01jd0000000000000000000000/delete)",
    "[x](../workflows)",
    "[x](#top)",
    '<a href="//evil.example">x</a>',
    HOSTILE_NOTES,
]


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def _elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.found


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_markdown_renders_inert(payload: str) -> None:
    html = str(render_markdown(payload))
    for tag, attrs in _elements(html):
        assert tag in ALLOWED_TAGS, html
        for name, value in attrs.items():
            assert name in ("href", "title", "rel", "start", "align"), html
            if name == "href":
                assert (value or "").startswith(("https://", "http://", "mailto:")), html


def test_ordinary_markdown_still_reads_well() -> None:
    html = str(
        render_markdown(
            "# Plan\n\n- **one**\n- `two`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "See [docs](https://example.com/d) and ~~old~~."
        )
    )
    assert "<h1>Plan</h1>" in html
    assert "<strong>one</strong>" in html
    assert "<code>two</code>" in html
    assert "<td>1</td>" in html
    assert "<s>old</s>" in html
    assert '<a href="https://example.com/d" rel="noopener noreferrer nofollow">docs</a>' in html


def test_text_that_looks_like_html_is_shown_as_text() -> None:
    html = str(render_markdown("use <b>bold</b> & <script>"))
    assert html == "<p>use &lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;</p>\n"


@pytest.mark.parametrize(
    "link", ["//evil.example/x", "/sessions/sess_01jd0000000000000000000000/delete", "x/y", "#top"]
)
def test_relative_and_scheme_relative_links_lose_their_target(link: str) -> None:
    """Only absolute http, https and mailto links keep an href: a scheme-relative one would
    leave for another host, a relative one would point into the console itself."""
    html = str(render_markdown(f"see [there]({link})"))
    assert "href" not in html, html
    assert "there</a>" in html, html
