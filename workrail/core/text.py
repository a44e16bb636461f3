"""Text normalisation for search and resume (spec 70 §9): Unicode NFKC, then a
locale-independent lowercase, then tokens `[a-z0-9_-]+`. One definition, so what the
index stores and what a query asks for are cut the same way.

Beyond the spec, a token is trimmed of its leading and trailing `-` and `_` (`--verbose`
is `verbose`, `__init__` is `init`), and a token joined by `-` or `_` also yields its parts
(`report-builder` is `report-builder`, `report` and `builder`): what people type finds a
word inside a flag, a path or an identifier, while the whole compound still narrows."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from workrail.core.budgets import TRUNCATION_MARKER

TOKEN_RE: Final = re.compile(r"[a-z0-9_-]+")
JOINERS: Final = "-_"
_PARTS_RE: Final = re.compile(r"[-_]+")


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


def first_line(text: str, limit: int = 120) -> str:
    """The first non-blank line, trimmed of Markdown heading marks, at most `limit` chars."""
    for raw in text.replace(TRUNCATION_MARKER, "\n").splitlines():
        line = raw.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""
