"""Store URLs as people see them: never with a password.

libpq takes a password in three places: the URL's userinfo (`postgresql://u:pw@h/db`), a
query parameter (`?password=pw`, and `sslpassword=` for a client key), or a key/value
connection string (`host=h password=pw`). Each is hidden; everything else is shown as
written, so the person recognises the URL they gave.

The URL is split the way libpq splits it rather than with urllib: libpq ends the userinfo at
the last `@` before the first `/`, so a password holding `?` or `#` is still a password
(urllib would cut it into a query or fragment and show it).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

MASK: Final = "***"
SECRET_KEYS: Final = frozenset({"password", "sslpassword"})

_CONNINFO_SECRET: Final = re.compile(r"(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)")


def redact_url(url: str) -> str:
    """The URL with every password replaced by `***`, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _CONNINFO_SECRET.sub(lambda m: m.group(1) + MASK, url)
    authority, slash, tail = rest.partition("/")
    if "@" in authority:
        userinfo, _at, hosts = authority.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        authority = f"{user}:{MASK}@{hosts}" if colon else f"{user}@{hosts}"
    head, question, query = f"{authority}{slash}{tail}".partition("?")
    if question:
        query = "&".join(_redact_parameter(piece) for piece in query.split("&"))
    return f"{scheme}://{head}{question}{query}"


def _redact_parameter(piece: str) -> str:
    key, eq, _value = piece.partition("=")
    if eq and unquote(key).strip().lower() in SECRET_KEYS:
        return f"{key}={MASK}"
    return piece
