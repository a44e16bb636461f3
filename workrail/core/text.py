"""Text normalisation for search and resume (spec 70 §9): Unicode NFKC, then a
locale-independent lowercase, then tokens `[a-z0-9_-]+`. One definition, so what the
index stores and what a query asks for are cut the same way.

Beyond the spec, a token is trimmed of its leading and trailing `-` and `_` (`--verbose`
is `verbose`, `__init__` is `init`), and a token joined by `-` or `_` also yields its parts
(`report-builder` is `report-builder`, `report` and `builder`): what people type finds a
word inside a flag, a path or an identifier, while the whole compound still narrows.

Also the one way agent-written text is made inert for a person's screen: control
characters (which a terminal obeys: clear the screen, set the window title, hide a
hyperlink) and bidirectional controls (which reorder what is shown) become visible marks."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from workrail.core.budgets import TRUNCATION_MARKER

TOKEN_RE: Final = re.compile(r"[a-z0-9_-]+")
JOINERS: Final = "-_"
_PARTS_RE: Final = re.compile(r"[-_]+")
CONTROL_RE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL, and the C1 controls (CSI, OSC, ST among them)."""
BIDI_RE: Final = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Bidirectional formatting controls: embeddings, overrides, isolates and marks."""


def normalise(text: str) -> str:
    """NFKC then casefold-free lowercase (str.lower is locale-independent in Python)."""
    return unicodedata.normalize("NFKC", text).lower()


def tokens(text: str) -> list[str]:
    """The tokens of `text` in order (duplicates kept), each compound followed by its
    parts; the truncation marker is not text."""
    found: list[str] = []
    for raw in TOKEN_RE.findall(normalise(text.replace(TRUNCATION_MARKER, " "))):
        word = raw.strip(JOINERS)
        if not word:
            continue
        found.append(word)
        if _PARTS_RE.search(word):
            found.extend(_PARTS_RE.split(word))
    return found


_LINK: Final = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_STRONG: Final = re.compile(r"(\*\*|__|~~)(.+?)\1")
_EMPHASIS: Final = re.compile(r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])")
_CODE: Final = re.compile(r"`+([^`]*)`+")
_LEAD: Final = re.compile(r"^(?:#+\s*|>\s*|[-*+]\s+|\d{1,9}[.)]\s+|\[[ xX]\]\s+)+")


def plain(line: str) -> str:
    """One line of Markdown as the text a person reads: no heading, quote or list marks,
    no emphasis or code marks, a link's text without its target."""
    text = _LEAD.sub("", line.strip())
    text = _LINK.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    for _ in range(3):  # nested emphasis (**_x_**) comes off a layer at a time
        stripped = _EMPHASIS.sub(r"\1", _STRONG.sub(r"\2", text))
        if stripped == text:
            break
        text = stripped
    return " ".join(text.split())


def first_line(text: str, limit: int = 120) -> str:
    """The first line with text, as plain text (a title: no `**Goal**` marks), at most
    `limit` chars."""
    for raw in text.replace(TRUNCATION_MARKER, "\n").splitlines():
        line = plain(raw)
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def visible_controls(text: str) -> str:
    """Every control character but tab and newline as `\\xNN`, so printing agent text on
    a terminal can never send it an escape sequence (ESC, CSI, OSC 0 titles, OSC 8 links)."""
    return CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def visible_bidi(text: str) -> str:
    """Every bidirectional control as `[U+XXXX]`, so it cannot reorder what is shown (the
    marks are plain ASCII: safe in HTML text and attributes alike)."""
    return BIDI_RE.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


def screen_safe(text: str) -> str:
    """Both: what a person's terminal or page may show of agent-written text."""
    return visible_bidi(visible_controls(text))
