"""Agent-written Markdown rendered for people, and kept inert.

Notes and artifacts come from agents, so they are untrusted. Two independent layers:
markdown-it-py renders CommonMark with raw HTML disabled (tags in the text come out as
text), then nh3 (the Ammonia sanitiser) keeps only a small allow-list of tags and
attributes and only absolute http, https and mailto links (relative and scheme-relative
ones, `/x` or `//host`, lose their target: they would point into the console or leave for
a host the text does not name). No script, style, event handler,
`javascript:`/`data:` URL or iframe survives either layer; the console's
Content-Security-Policy (no inline script) is the third.
"""

from __future__ import annotations

from typing import Final

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

ALLOWED_TAGS: Final = frozenset(
    {
        "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s",
        "code", "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr",
        "th", "td",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES: Final = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
}
URL_SCHEMES: Final = frozenset({"http", "https", "mailto"})

# "js-default" is CommonMark with raw HTML off and markdown-it's own link validation
# (which already refuses javascript:, vbscript:, file: and most data: URLs); tables and
# strikethrough are enabled on top because agents write them.
_md = MarkdownIt("js-default", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def render_markdown(text: str) -> Markup:
    """Sanitised HTML for `text`; safe to insert into a page as-is."""
    html = _md.render(text)
    clean = nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        url_relative="deny",
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return Markup(clean)  # noqa: S704 - sanitised above
