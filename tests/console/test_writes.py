"""The write routes against raw sockets: the sender is checked before a byte of the body
is read, and only a small urlencoded form is ever read."""

from __future__ import annotations

import socket
from urllib.parse import urlencode

import pytest

from tests.console.conftest import RunningConsole, Store, start_console
from tests.console.scenarios import started
from workrail.console.pages import MAX_FORM_BYTES
from workrail.engine.api import Engine

HUGE = 200_000_000


def _raw(console: RunningConsole, head: list[str], body: bytes = b"") -> bytes:
    """Send a request head (and `body`, possibly only the start of what it declares);
    whatever the server answers before it closes or goes quiet for 10 s."""
    host, port = console.host.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(("\r\n".join([*head, f"Host: {console.host}", "", ""])).encode() + body)
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except ConnectionResetError:
            pass
        return answer


def _status(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split(b" ", 2)[1])


@pytest.mark.parametrize(
    "sender",
    [
        [],  # no cookie
        ["Origin: http://evil.example"],  # no cookie, foreign page
        ["COOKIE", "Origin: http://evil.example"],  # the secret, but a foreign page
        ["COOKIE"],  # the secret, but no Origin or Referer
    ],
)
def test_a_refused_sender_is_answered_before_its_body_is_read(
    console: RunningConsole, store: Store, engine: Engine, sender: list[str]
) -> None:
    """A 200 MB multipart upload from a foreign page is refused at its head, not spooled."""
    sid, _ = started(engine)
    before = store.digest()
    cookie = f"Cookie: {console.cookie}"
    head = [
        f"POST /sessions/{sid}/archive HTTP/1.1",
        *(cookie if h == "COOKIE" else h for h in sender),
        "Content-Type: multipart/form-data; boundary=x",
        f"Content-Length: {HUGE}",
    ]
    answer = _raw(console, head, b"--x\r\n" + b"a" * 1000)
    assert _status(answer) == 403, answer[:300]
    assert store.digest() == before


def _authorised_head(console: RunningConsole, sid: str, content_type: str) -> list[str]:
    return [
        f"POST /sessions/{sid}/archive HTTP/1.1",
        f"Cookie: {console.cookie}",
        f"Origin: {console.base_url}",
        f"Content-Type: {content_type}",
    ]


def test_only_small_urlencoded_forms_are_read(
    console: RunningConsole, store: Store, engine: Engine
) -> None:
    sid, _ = started(engine)
    before = store.digest()
    form = urlencode({"csrf": console.guard.csrf}).encode()
    multipart = (
        b'--x\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n'
        + console.guard.csrf.encode()
        + b"\r\n--x--\r\n"
    )
    # the right sender and token, as multipart: refused, not parsed
    answer = _raw(
        console,
        [
            *_authorised_head(console, sid, "multipart/form-data; boundary=x"),
            f"Content-Length: {len(multipart)}",
        ],
        multipart,
    )
    assert _status(answer) == 415
    # declared too big: refused at the head
    answer = _raw(
        console,
        [
            *_authorised_head(console, sid, "application/x-www-form-urlencoded"),
            f"Content-Length: {HUGE}",
        ],
        form,
    )
    assert _status(answer) == 413
    # chunked, no length: refused once what arrived passes the limit
    big = form + b"&pad=" + b"a" * MAX_FORM_BYTES
    chunked = b"".join(
        f"{len(big[i : i + 4096]):x}\r\n".encode() + big[i : i + 4096] + b"\r\n"
        for i in range(0, len(big), 4096)
    )
    answer = _raw(
        console,
        [
            *_authorised_head(console, sid, "application/x-www-form-urlencoded"),
            "Transfer-Encoding: chunked",
        ],
        chunked,
    )
    assert _status(answer) == 413
    # too many fields
    fields = urlencode([("csrf", console.guard.csrf)] + [(f"f{i}", "") for i in range(64)])
    answer = _raw(
        console,
        [
            *_authorised_head(console, sid, "application/x-www-form-urlencoded"),
            f"Content-Length: {len(fields)}",
        ],
        fields.encode(),
    )
    assert _status(answer) == 400
    assert store.digest() == before
    # and the real form still works
    answer = _raw(
        console,
        [
            *_authorised_head(console, sid, "application/x-www-form-urlencoded; charset=utf-8"),
            f"Content-Length: {len(form)}",
        ],
        form,
    )
    assert _status(answer) == 303
    assert b"notice=archived" in answer


def test_two_consoles_on_one_host_keep_their_secrets_apart(
    console: RunningConsole, store: Store, engine: Engine
) -> None:
    """Cookies are not port-scoped: a browser sends every console on the host the cookies
    of all of them. Each console must find its own among them, whichever comes first."""
    other = start_console(store.data_dir, store_url=store.url)
    try:
        assert other.cookie_name != console.cookie_name
        for running in (console, other):
            (set_cookie,) = running.get(f"/?secret={running.guard.secret}").cookies
            assert set_cookie.startswith(f"{running.cookie};")
        sid, _ = started(engine)
        for both in (f"{console.cookie}; {other.cookie}", f"{other.cookie}; {console.cookie}"):
            for running in (console, other):
                page = running.get("/", Cookie=both)
                assert "actions enabled" in page.body, (running.base_url, both)
                form = urlencode({"csrf": running.guard.csrf}).encode()
                reply = running.request(
                    "POST",
                    f"/sessions/{sid}/export",
                    body=form,
                    headers={
                        "Cookie": both,
                        "Origin": running.base_url,
                        "Content-Type": "application/x-www-form-urlencoded",
                    },
                )
                assert reply.status == 200
                assert sid in reply.body
    finally:
        other.stop()
        other.backend.close()
