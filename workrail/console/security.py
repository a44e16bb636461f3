"""What keeps the console's few write actions safe on a machine shared with a browser.

* **Host check** (every request): only the names the console was bound to answer (and
  those of `--allow-host`; on a wildcard bind, any IP address too), so a page on another
  site cannot reach it through DNS rebinding, which always brings the attacker's name.
* **Per-start secret**: a random value printed in the console's URL. Opening that URL once
  sets it as an HttpOnly, SameSite=Strict cookie and redirects to the same page without
  it, so it leaves the address bar and the history. Write actions need the cookie, whose
  name is the console's own (per port), so consoles side by side keep theirs apart.
* **CSRF token + Origin** (every write): a form field that only a page of this console
  can know, and an `Origin` (or, failing that, `Referer`) naming this console.

Reads need none of the secret: they never write, and a foreign origin cannot read their
answers (same-origin policy; the Host check stops rebinding).

* **Live streams** (`/live`) are few (a fixed number of slots), so a foreign page must not
  be able to hold them even without reading them: a request whose `Origin` names another
  site (or is `null`), or that a browser marks as cross-site (`Sec-Fetch-Site`, which
  every current browser sends, also with `no-cors` requests that carry no Origin), is
  refused before it takes a slot.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

SECRET_PARAM: Final = "secret"
COOKIE_PREFIX: Final = "workrail_console"
CSRF_FIELD: Final = "csrf"
LOOPBACK_NAMES: Final = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_HOSTS: Final = frozenset({"0.0.0.0", "::", ""})


def cookie_name(scope: Mapping[str, Any]) -> str:
    """The secret's cookie name for the console serving `scope`: its own per listening
    port. Cookies are not port-scoped, so with one shared name a second console on the
    same host (a standalone one beside `serve`'s, or two stores) would overwrite the first
    one's cookie, or shadow it, and silently disable its actions. A console restarted on
    the same port reuses the name, so stale cookies do not pile up."""
    server = scope.get("server")
    if isinstance(server, (tuple, list)) and len(server) == 2 and server[1] is not None:
        return f"{COOKIE_PREFIX}_{server[1]}"
    return COOKIE_PREFIX


def host_name(header: str) -> str:
    """The name part of a Host header: `[::1]:3456` → `::1`, `localhost:80` → `localhost`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    if header.count(":") == 1:
        return header.split(":", 1)[0]
    return header


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def browse_host(bind_host: str) -> str:
    """The address to print for a bind address: a wildcard bind is reached on loopback."""
    if bind_host in WILDCARD_HOSTS:
        return "::1" if ":" in bind_host else "127.0.0.1"
    return bind_host


@dataclass(frozen=True)
class Guard:
    """The per-start secrets and the names this console answers to."""

    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    hosts: frozenset[str] = LOOPBACK_NAMES
    any_ip: bool = False
    """Answer to every IP-literal Host too (a wildcard bind: whichever address of the
    machine a browser used). DNS rebinding always brings a name, never an IP literal, so
    this keeps the protection."""

    @classmethod
    def for_bind(cls, bind_host: str, extra_hosts: Iterable[str] = ()) -> Guard:
        """Loopback names and `extra_hosts` always; the bind address too, or, for a
        wildcard bind, every IP address."""
        names = set(LOOPBACK_NAMES) | {host_name(h) for h in extra_hosts}
        wildcard = bind_host in WILDCARD_HOSTS
        if not wildcard:
            names.add(host_name(bind_host) if bind_host.startswith("[") else bind_host.lower())
        return cls(hosts=frozenset(names), any_ip=wildcard)

    def host_allowed(self, host_header: str | None) -> bool:
        if not host_header:
            return False
        name = host_name(host_header)
        return name in self.hosts or (self.any_ip and is_ip_literal(name))

    def secret_ok(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(
            presented.encode("utf-8", "replace"), self.secret.encode()
        )

    def csrf_ok(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(
            presented.encode("utf-8", "replace"), self.csrf.encode()
        )

    def origin_ok(self, origin: str | None, referer: str | None, host_header: str) -> bool:
        """The write came from a page of this console: its Origin (or, when a browser
        sends none, its Referer) has this request's scheme-less host and port."""
        claimed = origin if origin and origin != "null" else referer
        if not claimed:
            return False
        parts = urlsplit(claimed)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return parts.netloc.lower() == host_header.strip().lower()


STREAM_FETCH_SITES: Final = frozenset({"same-origin", "none"})
"""`Sec-Fetch-Site` values of a request a page of this console (or the user) made."""


def stream_origin_ok(origin: str | None, fetch_site: str | None, host_header: str) -> bool:
    """A live stream was asked for by a page of this console, as far as the browser says:
    an `Origin`, when sent, names this console's host and port, and `Sec-Fetch-Site`, when
    sent, says same-origin. A client that sends neither is no browser page (curl, a
    script): it is not what this check is for, and it is let in."""
    if origin is not None:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # "null" (a sandboxed frame, a file: page) and anything malformed
        if parts.netloc.lower() != host_header.strip().lower():
            return False
    return fetch_site is None or fetch_site.strip().lower() in STREAM_FETCH_SITES


CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)

SECURITY_HEADERS: Final = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
