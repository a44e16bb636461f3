"""Phase two of the console on both backends: the Sessions list on the query port
(filters, search, archived toggle, paging), archive / unarchive / delete through the
engine behind the secret, CSRF and Origin, and the copy-ready resume_session call."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from tests.console.conftest import RunningConsole, Store, screenshot
from tests.console.scenarios import forked_blocked_looped, started
from tests.engine.helpers import ok
from workrail.engine.api import Engine
from workrail.mcp.resume_tool import resume_handler


def _open(page: Any, console: RunningConsole, path: str, *, secret: bool = False) -> None:
    if secret:
        page.goto(console.secret_url)
        page.wait_for_url(f"{console.base_url}/**")
    page.goto(console.base_url + path)
    page.wait_for_function("() => document.body.dataset.ready === '1'")


def _ids(page: Any) -> set[str]:
    return set(
        page.locator("tr[data-session-id]").evaluate_all("rs => rs.map(r => r.dataset.sessionId)")
    )


def _post(console: RunningConsole, path: str, form: dict[str, str], **headers: str) -> Any:
    sent = {
        "Cookie": console.cookie,
        "Origin": console.base_url,
        "Content-Type": "application/x-www-form-urlencoded",
        **headers,
    }
    return console.request("POST", path, body=urlencode(form).encode(), headers=sent)


def test_list_filters_search_and_archived_toggle(
    page: Any, console: RunningConsole, engine: Engine
) -> None:
    looped = forked_blocked_looped(engine)
    blocked = ok(engine.start_workflow("val-flow", {"goal": "write the changelog"}))
    stuck = ok(engine.advance(blocked["stateToken"], blocked["ackToken"], notes_markdown="no"))
    assert stuck["kind"] == "blocked"
    blocked_sid = engine.deps.codec.parse_state(blocked["stateToken"]).unwrap().session_id
    plain, _ = started(engine)
    _open(page, console, "/")
    assert _ids(page) == {looped, blocked_sid, plain}
    row = page.locator(f"tr[data-session-id='{looped}']")
    assert "review the parser" in row.locator("a.title").inner_text()
    assert " of " in row.locator("td.progress").inner_text()
    screenshot(page, "sessions-list")

    page.check("input[name=status][value=blocked]")
    page.click("#list-filters button[type=submit]")
    page.wait_for_url("**status=blocked**")
    assert _ids(page) == {blocked_sid}

    page.goto(f"{console.base_url}/?q=changelog")
    assert _ids(page) == {blocked_sid}
    page.goto(f"{console.base_url}/?workflow=loopctl-flow")
    assert _ids(page) == {looped}
    page.goto(f"{console.base_url}/?q=nothing-like-this-anywhere")
    assert _ids(page) == set()
    assert "No session matches" in page.inner_text("#session-list")

    engine.archive([plain]).unwrap()
    page.goto(f"{console.base_url}/")
    assert plain not in _ids(page)
    page.select_option("select[name=archived]", "only")
    page.click("#list-filters button[type=submit]")
    page.wait_for_url("**archived=only**")
    assert _ids(page) == {plain}
    assert "archived" in page.locator(f"tr[data-session-id='{plain}'] .badge").inner_text()
    page.select_option("select[name=archived]", "include")
    page.click("#list-filters button[type=submit]")
    page.wait_for_url("**archived=include**")
    assert _ids(page) == {looped, blocked_sid, plain}


def test_list_pages_with_the_cursor_and_keeps_filters(
    page: Any, console: RunningConsole, engine: Engine
) -> None:
    made = {started(engine)[0] for _ in range(52)}
    _open(page, console, "/?workflow=probe-flow")
    first = _ids(page)
    assert len(first) == 50
    page.click("a[rel=next]")
    page.wait_for_url("**cursor=*")
    assert "workflow=probe-flow" in page.url
    second = _ids(page)
    assert len(second) == 2
    assert first | second == made
    assert not first & second
    page.click("text=First page")
    page.wait_for_url(lambda url: "cursor=" not in url)  # the next page, not this one
    assert "workflow=probe-flow" in page.url
    assert _ids(page) == first


def test_archive_with_and_without_the_secret(
    page: Any, console: RunningConsole, store: Store, engine: Engine
) -> None:
    sid, _ = started(engine)
    _open(page, console, f"/sessions/{sid}")
    before = store.digest()
    page.click("#archive-button")
    page.locator(".error-message").wait_for()
    assert "needs the console's secret" in page.inner_text(".error-message")
    assert store.digest() == before, "refused: nothing changed"
    assert not engine.session_summary(sid).unwrap().archived

    _open(page, console, f"/sessions/{sid}", secret=True)
    page.click("#archive-button")
    page.wait_for_url("**notice=archived")
    assert "Archived" in page.inner_text(".notice")
    assert page.locator("#archived-badge").is_visible()
    assert engine.session_summary(sid).unwrap().archived
    screenshot(page, "session-archived")
    page.click("#unarchive-button")
    page.wait_for_url("**notice=unarchived")
    assert not engine.session_summary(sid).unwrap().archived


def test_delete_needs_confirmation_and_the_secret(
    page: Any, console: RunningConsole, engine: Engine
) -> None:
    sid, _ = started(engine)
    keep, _ = started(engine)
    _open(page, console, f"/sessions/{sid}", secret=True)
    page.click("#delete-link")
    page.wait_for_url(f"**/sessions/{sid}/delete")
    assert sid in page.inner_text("h1 + p")
    screenshot(page, "delete-confirm")
    page.click("#confirm-delete")
    page.wait_for_url(f"{console.base_url}/?notice=deleted")
    assert _ids(page) == {keep}
    response = page.goto(f"{console.base_url}/sessions/{sid}")
    assert response is not None
    assert response.status == 404


def test_lifecycle_posts_need_secret_csrf_origin_and_confirmation(
    console: RunningConsole, store: Store, engine: Engine
) -> None:
    sid, _ = started(engine)
    csrf = console.guard.csrf
    before = store.digest()
    for action in ("archive", "unarchive", "delete"):
        path = f"/sessions/{sid}/{action}"
        form = {"csrf": csrf, "confirm": sid}
        assert _post(console, path, form, Cookie="").status == 403
        assert _post(console, path, {"confirm": sid}).status == 403
        assert _post(console, path, form, Origin="http://evil.example").status == 403
    assert _post(console, f"/sessions/{sid}/delete", {"csrf": csrf}).status == 400
    assert store.digest() == before
    archived = _post(console, f"/sessions/{sid}/archive", {"csrf": csrf})
    assert archived.status == 303
    assert archived.headers["location"].endswith("notice=archived")
    again = _post(console, f"/sessions/{sid}/archive", {"csrf": csrf})
    assert again.status == 303, "archiving an archived session is a no-op, not an error"
    gone = _post(console, f"/sessions/{sid}/delete", {"csrf": csrf, "confirm": sid})
    assert gone.status == 303
    assert gone.headers["location"].endswith("/?notice=deleted")
    assert console.get(f"/sessions/{sid}").status == 404
    assert _post(console, f"/sessions/{sid}/archive", {"csrf": csrf}).status == 404


def test_resume_call_finds_the_session(page: Any, console: RunningConsole, engine: Engine) -> None:
    sid = forked_blocked_looped(engine)
    _open(page, console, f"/sessions/{sid}")
    page.click("#resume-call summary")
    call = json.loads(page.inner_text("#resume-call-text"))
    assert call["tool"] == "resume_session"
    assert call["params"]["sessionId"] == sid
    assert "stateToken" not in page.content()
    assert "st1." not in page.content()
    found = resume_handler(engine)(call["params"]).unwrap()
    (best, *_) = found["candidates"]
    assert best["sessionId"] == sid
    assert best["runId"] == call["params"]["runId"]
    page.click("button[data-copy]")
    page.wait_for_function(
        "() => document.querySelector('button[data-copy]').textContent !== 'Copy'"
    )
