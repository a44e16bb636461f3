"""JavaScript value semantics the reference's conditions and validators rely on.

Workflows written for the reference compare context values the way JavaScript does
(`String(x)`, `Number(x)`, truthiness, JS regular expressions). Emulating those rules here
keeps the same workflow taking the same branch in both implementations.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from workrail.core.canonical import CanonicalJsonError, canonical_bytes

# ECMAScript StrWhiteSpaceChar (String.prototype.trim and Number() both strip these).
_JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_DECIMAL_RE: Final = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_RADIX_RE: Final = re.compile(r"^0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)$")
_NAMED_GROUP_RE: Final = re.compile(r"\(\?<(?![=!])")
_BACKREF_RE: Final = re.compile(r"\\k<([A-Za-z_][A-Za-z0-9_]*)>")
_KNOWN_FLAGS: Final = frozenset("dgimsuvy")
# Python-only syntax authors write in workflow regexes: inline global flags such as `(?i)`,
# and Python's named groups `(?P<name>…)` / back-references `(?P=name)`.
_INLINE_FLAGS_RE: Final = re.compile(r"(?<!\\)\(\?([aiLmsux]+)\)")
_PYTHON_GROUP_RE: Final = re.compile(r"(?<!\\)\(\?P[<=]")
_INLINE_TO_PY: Final = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def js_trim(text: str) -> str:
    return text.strip(_JS_WHITESPACE)


def is_number(value: Any) -> bool:
    """A JSON number (bool is not a number, unlike in Python's type tree)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def js_number_to_string(value: float | int) -> str:
    """`Number.prototype.toString` (JCS uses the same shortest round-trip form)."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
    try:
        return canonical_bytes(value).decode("ascii")
    except CanonicalJsonError:  # integers beyond 2^53: JS would print a rounded float
        return js_number_to_string(float(value))


def js_string(value: Any) -> str:
    """`String(x)`; `None` (JSON null) becomes `"null"`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_number(value):
        return js_number_to_string(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    return "[object Object]"


def js_number(value: Any) -> float:
    """`Number(x)`; NaN when JavaScript would give NaN."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if is_number(value):
        return float(value)
    if isinstance(value, str):
        text = js_trim(value)
        if text == "":
            return 0.0
        if text in ("Infinity", "+Infinity"):
            return math.inf
        if text == "-Infinity":
            return -math.inf
        if _DECIMAL_RE.fullmatch(text):
            return float(text)
        if _RADIX_RE.fullmatch(text):
            return float(int(text, 0))
        return math.nan
    if isinstance(value, list):
        return js_number(js_string(value))
    return math.nan


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness: false for null, false, 0, NaN and ""; containers are true."""
    if value is None or value is False:
        return False
    if is_number(value):
        return not (value == 0 or (isinstance(value, float) and math.isnan(value)))
    if isinstance(value, str):
        return value != ""
    return True


def compile_js_regex(pattern: str, flags: str = "") -> re.Pattern[str] | None:
    """Compile a workflow's regular expression; `None` when it cannot mean anything.

    JavaScript syntax, with the common dialect differences covered (named groups,
    `\\k<name>`, flags i/m/s; `g`, `y`, `d`, `u`, `v` do not change whether a match exists
    and are accepted and ignored). Python-only syntax is honoured as the author meant it:
    inline flags such as `(?i)` apply to the whole pattern wherever they stand, and
    `(?P<name>…)` groups work; `python_only_syntax` names them, since JavaScript engines
    (WorkRail's among them) reject such a pattern.
    """
    if len(set(flags)) != len(flags) or not set(flags) <= _KNOWN_FLAGS:
        return None
    py_flags = 0
    if "i" in flags:
        py_flags |= re.IGNORECASE
    if "m" in flags:
        py_flags |= re.MULTILINE
    if "s" in flags:
        py_flags |= re.DOTALL
    for inline in _INLINE_FLAGS_RE.findall(pattern):
        for letter in inline:
            py_flags |= _INLINE_TO_PY.get(letter, 0)
    pattern = _INLINE_FLAGS_RE.sub("", pattern)
    translated = _BACKREF_RE.sub(r"(?P=\1)", _NAMED_GROUP_RE.sub("(?P<", pattern))
    try:
        return re.compile(translated, py_flags)
    except re.error:
        return None


def python_only_syntax(pattern: str) -> list[str]:
    """The parts of `pattern` a JavaScript engine rejects but Python accepts."""
    found = [f"(?{m})" for m in _INLINE_FLAGS_RE.findall(pattern)]
    if _PYTHON_GROUP_RE.search(pattern):
        found.append("(?P<name>…)")
    return found
