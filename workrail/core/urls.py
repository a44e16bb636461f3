"""Store URLs as people see them: never with a password."""

from __future__ import annotations


def redact_url(url: str) -> str:
    """The URL with its password replaced by `***`, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    auth, _at, host = rest.partition("@")
    user = auth.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in auth else f"{scheme}://{user}@{host}"
