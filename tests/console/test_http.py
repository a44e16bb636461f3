"""The console over real HTTP: the guard (Host, secret, CSRF, Origin), error pages, bad
filter values, damaged sessions, and that reading never writes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

from tests.console.conftest import RunningConsole, Store
from tests.console.scenarios import forked_blocked_looped, long_flow, long_run, started
from tests.engine.helpers import ok
from workrail.console.dag import KEEP
from workrail.engine.api import Engine


def _cookie(console: RunningConsole) -> str:
    return console.cookie


def _export(console: RunningConsole, sid: str, **overrides: str | None) -> tuple[int, str]:
    headers = {
        "Cookie": _cookie(console),
        "Origin": console.base_url,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    form = {"csrf": console.guard.csrf}
    for key, value in overrides.items():
        if key == "csrf":
            if value is None:
                form.pop("csrf")
            else:
                form["csrf"] = value
        elif value is None:
            headers.pop(key.capitalize(), None)
        else:
            headers[key.capitalize()] = value
    reply = console.request(
        "POST", f"/sessions/{sid}/export", body=urlencode(form).encode(), headers=headers
    )
    return reply.status, reply.body


def test_foreign_host_is_refused_everywhere(console: RunningConsole, engine: Engine) -> None:
    sid, _ = started(engine)
    for path in ("/", f"/sessions/{sid}", "/workflows", "/static/console.js", "/live"):
        reply = console.get(path, Host="evil.example:3456")
        assert reply.status == 421, path
        assert "Host header refused" in reply.body
    assert console.get("/", Host=f"localhost:{console.base_url.rsplit(':', 1)[1]}").status == 200
    assert console.get("/", Host="[::1]:80").status == 200


def test_secret_link_sets_a_strict_httponly_cookie_and_leaves_the_url(
    console: RunningConsole,
) -> None:
    reply = console.get(f"/workflows?secret={console.guard.secret}&x=1")
    assert reply.status == 303
    assert reply.headers["location"].endswith("/workflows?x=1")
    (cookie,) = reply.cookies
    assert cookie.startswith(f"{console.cookie};")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    wrong = console.get("/?secret=not-the-secret")
    assert wrong.status == 303
    assert wrong.cookies == []
    assert "notice=bad-secret" in wrong.headers["location"]
    shown = console.get("/?notice=bad-secret")
    assert "not this console" in shown.body


def test_pages_carry_security_headers(console: RunningConsole) -> None:
    reply = console.get("/")
    csp = reply.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert reply.headers["x-frame-options"] == "DENY"


def test_export_needs_secret_csrf_and_origin(
    console: RunningConsole, store: Store, engine: Engine
) -> None:
    sid = forked_blocked_looped(engine)
    before = store.digest()
    status, body = _export(console, sid, cookie=None)
    assert status == 403
    assert "needs the console&#39;s secret" in body
    status, body = _export(console, sid, cookie=f"{console.cookie_name}=guess")
    assert status == 403
    status, body = _export(console, sid, csrf=None)
    assert status == 403
    assert "token is missing or stale" in body
    status, body = _export(console, sid, csrf="forged")
    assert status == 403
    status, body = _export(console, sid, origin="http://evil.example")
    assert status == 403
    assert "did not come from a page of this console" in body
    status, body = _export(console, sid, origin=None)
    assert status == 403, "no Origin and no Referer is refused"
    status, body = _export(console, sid, origin=None, referer=f"{console.base_url}/sessions/{sid}")
    assert status == 200, "a same-console Referer stands in for a missing Origin"
    assert store.digest() == before, "a refused (or done) export writes nothing"
    status, body = _export(console, sid)
    assert status == 200
    bundle = json.loads(body)
    assert bundle["session"]["sessionId"] == sid
    assert "salvage" not in bundle
    assert console.request("GET", f"/sessions/{sid}/export").status == 405


def test_unknown_ids_are_404_pages_with_a_way_back(console: RunningConsole, engine: Engine) -> None:
    sid, _ = started(engine)
    unknown = "sess_" + "a" * 26
    for path in (
        f"/sessions/{unknown}",
        "/sessions/not-an-id",
        "/sessions/..%2F..%2Fetc",
        f"/sessions/{sid}/nodes/node_{'b' * 26}",
        f"/sessions/{sid}/nodes/<script>",
        f"/sessions/{unknown}/events",
        "/workflows/no-such-workflow",
        "/no/such/page",
    ):
        reply = console.get(path)
        assert reply.status == 404, path
        assert "Back to the sessions" in reply.body, path
        assert "Traceback" not in reply.body
        assert "<script>" not in reply.body


def test_malformed_filters_are_ignored_with_a_notice(
    console: RunningConsole, engine: Engine
) -> None:
    sid = forked_blocked_looped(engine)
    query = "kind=node_created&kind=bogus_kind&since=abc&limit=999999&blocked=maybe"
    reply = console.get(f"/sessions/{sid}/events?{query}")
    assert reply.status == 200
    for notice in (
        "Ignored kind=&#39;bogus_kind&#39;: not an event kind.",
        "Ignored since=&#39;abc&#39;: not a whole number.",
        "Ignored limit=999999: must be between 1 and 1000.",
        "Ignored blocked=&#39;maybe&#39;",
    ):
        assert notice in reply.body
    kinds = set(re.findall(r'class="event kind-([a-z_]+)', reply.body))
    assert kinds == {"node_created"}, "the valid part of the filter still applies"
    listing = console.get("/?status=stuck&since=yesterday&archived=maybe&cursor=p1.bogus")
    assert listing.status == 200
    for notice in (
        "Ignored status=&#39;stuck&#39;",
        "Ignored since=&#39;yesterday&#39;",
        "Ignored archived=&#39;maybe&#39;",
        "Ignored a page cursor",
    ):
        assert notice in listing.body


def test_blocked_only_shows_the_blocked_attempt(console: RunningConsole, engine: Engine) -> None:
    sid = forked_blocked_looped(engine)
    reply = console.get(f"/sessions/{sid}/events?blocked=1")
    rows = re.findall(r'<tr class="event kind-([a-z_]+)( blocked)?"', reply.body)
    assert rows
    assert all(flag for _kind, flag in rows)
    kinds = {kind for kind, _ in rows}
    assert {"node_created", "edge_created", "validation_performed"} <= kinds


def test_event_log_pages(console: RunningConsole, engine: Engine) -> None:
    sid = forked_blocked_looped(engine)
    first = console.get(f"/sessions/{sid}/events?limit=10")
    indexes = [int(i) for i in re.findall(r'data-event-index="(\d+)"', first.body)]
    assert indexes == list(range(10))
    (next_link,) = re.findall(r'rel="next" href="\?([^"]+)"', first.body)
    second = console.get(f"/sessions/{sid}/events?{next_link.replace('&amp;', '&')}")
    indexes = [int(i) for i in re.findall(r'data-event-index="(\d+)"', second.body)]
    assert indexes == list(range(10, 20))


def test_damaged_session_is_shown_read_only_from_its_prefix(
    console: RunningConsole, store: Store, engine: Engine
) -> None:
    sid, r = started(engine)
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    store.damage_tail(sid)
    store.noticed()
    before = store.digest()
    for path in (f"/sessions/{sid}", f"/sessions/{sid}/events", "/"):
        reply = console.get(path)
        assert reply.status == 200, path
        assert "corrupt_tail" in reply.body
    page = console.get(f"/sessions/{sid}")
    assert "Damaged session" in page.body
    assert "validated prefix" in page.body
    assert 'data-node-id="node_' in page.body
    assert store.digest() == before


def test_a_session_whose_head_is_unreadable_is_still_a_page(
    console: RunningConsole, store: Store, engine: Engine
) -> None:
    sid, _ = started(engine)
    store.damage_head(sid)
    kind = store.open().sessions.health(sid).unwrap().kind
    assert kind in ("corrupt_head", "corrupt_tail")  # files: head; PostgreSQL: first segment
    page = console.get(f"/sessions/{sid}")
    assert page.status == 200
    assert f"Damaged session ({kind})" in page.body
    assert "holds no run" in page.body


def test_reading_every_page_writes_nothing(
    console: RunningConsole, store: Store, engine: Engine
) -> None:
    sid = forked_blocked_looped(engine)
    before = store.digest()
    page = console.get(f"/sessions/{sid}")
    nodes = sorted(set(re.findall(r'data-node-id="(node_[a-z0-9]+)"', page.body)))
    assert len(nodes) == 7, "prep, its fork, review, checkpoint, blocked, review, done"
    for path in [
        "/",
        "/workflows",
        "/workflows/loopctl-flow",
        f"/sessions/{sid}/events?blocked=1",
        *(f"/sessions/{sid}/nodes/{n}" for n in nodes),
    ]:
        assert console.get(path).status == 200, path
    assert store.digest() == before


def test_a_folded_stretch_is_rendered_only_when_asked_for(
    console: RunningConsole, store: Store, tmp_path: Path
) -> None:
    sid, _ = long_run(store.engine(long_flow(tmp_path / "flows", 40)), 30)
    page = console.get(f"/sessions/{sid}")
    shown = re.findall(r'data-node-id="(node_[a-z0-9]+)"', page.body)
    assert len(shown) == 2 * KEEP + 1, "the ends of the stretch and the tip"
    (fold,) = re.findall(r'data-fold-id="(node_[a-z0-9]+)"', page.body)
    assert "… 26 more steps (work-loop@1::think … work-loop@13::act)" in page.body
    assert f"?open={fold}#fold-{fold}" in page.body, "without JavaScript, a link opens it"
    assert fold not in shown

    opened = console.get(f"/sessions/{sid}?open={fold}&open=nonsense&open=node_UPPER")
    assert opened.status == 200
    assert f'id="fold-{fold}" data-fold-id="{fold}" open' in opened.body
    every = re.findall(r'data-node-id="(node_[a-z0-9]+)"', opened.body)
    assert len(every) == 31
    assert fold in every
    assert set(shown) <= set(every)

    middle = every[15]
    node_page = console.get(f"/sessions/{sid}/nodes/{middle}")
    assert f'data-node-id="{middle}"' in node_page.body, "a selected node is never folded"


def test_search_finds_a_word_inside_a_flag_or_a_path(
    console: RunningConsole, engine: Engine
) -> None:
    r = ok(engine.start_workflow("probe-flow", {"goal": "Run it with --verbose"}))
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="Touched src/report.py"))
    for word in ("verbose", "report"):
        reply = console.get(f"/?q={word}", Cookie=_cookie(console))
        assert reply.status == 200, word
        assert f'data-session-id="{sid}"' in reply.body, word


def test_the_status_filter_takes_the_status_words_and_their_aliases(
    console: RunningConsole, engine: Engine
) -> None:
    sid, _ = started(engine)
    for word in ("in_progress", "pending", "in+progress"):
        reply = console.get(f"/?status={word}")
        assert reply.status == 200, word
        assert "Ignored status" not in reply.body, word
        assert f'data-session-id="{sid}"' in reply.body, word
        assert 'value="in_progress" checked' in reply.body, word
    page = console.get(f"/sessions/{sid}")
    assert "status-in_progress" in page.body
    assert ">pending<" not in page.body
