"""The console in a real browser (Debian's Chromium via Playwright): the pages people use,
live updates after an advance made through the engine, the guarded export, hostile
Markdown, damaged sessions. Each view leaves a screenshot in test-artifacts/console/."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE
from tests.console.conftest import RunningConsole, Store, screenshot, start_console
from tests.console.scenarios import (
    HOSTILE_NOTES,
    forked_blocked_looped,
    long_flow,
    long_run,
    started,
)
from tests.engine.helpers import loop_control, ok
from workrail.engine.api import Engine

LIVE_TIMEOUT_MS = 20_000
"""Generous: Chromium, the server and the store share two busy cores under CI."""


def _open(page: Any, console: RunningConsole, path: str, *, secret: bool = False) -> None:
    if secret:
        page.goto(console.secret_url)
        page.wait_for_url(f"{console.base_url}/")
    page.goto(console.base_url + path)
    page.wait_for_function("() => document.body.dataset.ready === '1'")


def _node(page: Any, text: str) -> Any:
    return page.locator("a.node", has_text=text)


def test_session_page_of_a_forked_blocked_looped_session(
    page: Any, console: RunningConsole, engine: Engine
) -> None:
    sid = forked_blocked_looped(engine)
    _open(page, console, "/")
    page.click(f"tr[data-session-id='{sid}'] a.title")
    page.wait_for_url(f"**/sessions/{sid}")
    assert sid in page.locator("h1").inner_text()
    assert "review the parser" in page.locator("h1").inner_text(), "the goal is the title"
    assert page.locator("#pending-step").inner_text() == "Done", "by its title"
    assert page.locator("#pending-step").get_attribute("title") == "done"
    nodes = page.locator(".dag a.node")
    assert nodes.count() == 7
    assert page.locator(".dag a.node.kind-checkpoint").count() == 1
    assert page.locator(".dag a.node.kind-blocked_attempt").count() == 1
    assert page.locator(".dag .badge.fork").count() == 2, "prep was forked; so was review"
    preferred = page.locator(".dag a.node.preferred")
    assert preferred.count() == 1
    assert "done" in preferred.inner_text()
    assert "preferred tip" in preferred.inner_text()
    assert page.locator(".dag .badge.tip").count() == 3

    page.locator(".dag a.node.kind-blocked_attempt").click()
    panel = page.locator("#node-panel")
    panel.locator("text=Blocked: missing required output").wait_for()
    assert "MISSING_REQUIRED_OUTPUT" in panel.inner_text()
    assert "What to fix:" in panel.inner_text()
    fix = panel.locator(".blocker .fix").first.inner_text()
    assert "Send nextCall again" in fix, "the server's advice"
    assert "fresh ackToken" not in fix, "the server's advice"
    assert "Validation of attempt" in panel.inner_text()
    assert re.search(r"/sessions/[^/]+/nodes/node_", page.url), "the panel has its own URL"
    screenshot(page, "session-blocked-node")

    _node(page, "prep").first.click()
    panel.locator(".prompt-title", has_text="Prep").wait_for()
    text = panel.inner_text()
    assert "Prepare." in text
    assert "Prepared the review." in text
    assert "A second take on the prep." in text
    assert "evaluated condition" in text
    assert "Evaluated artifact condition" in text
    assert panel.locator("details.artifact").count() == 2
    assert '"goal": "review the parser"' in text
    page.go_back()
    panel.locator("text=Blocked: missing required output").wait_for()
    assert not page.errors
    _node(page, "prep").first.click()
    panel.locator(".prompt-title", has_text="Prep").wait_for()
    screenshot(page, "session")


def test_live_update_after_an_advance_through_the_engine(
    page: Any, browser: Any, console: RunningConsole, engine: Engine
) -> None:
    sid, r = started(engine)
    _open(page, console, f"/sessions/{sid}")
    page.wait_for_function("() => document.body.dataset.liveState === 'live'")
    before = int(page.locator("#event-count").inner_text())
    page.evaluate("() => { window.__notReloaded = true; }")
    a = ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned it"))
    page.wait_for_function(
        f"() => Number(document.querySelector('#event-count').textContent) > {before}",
        timeout=LIVE_TIMEOUT_MS,
    )
    assert page.evaluate("() => window.__notReloaded") is True, "updated in place, not reloaded"
    assert page.locator(".dag a.node").count() == 2
    assert page.locator("#pending-step").inner_text() == "Build"

    # Paused: a second, unpaused tab (its own browser context) is the witness that the
    # change was announced; the paused page must not have moved.
    page.click("#live-toggle")
    page.wait_for_function("() => document.body.dataset.liveState === 'paused'")
    paused_count = page.locator("#event-count").inner_text()
    witness_context = browser.new_context()
    witness = witness_context.new_page()
    witness.goto(f"{console.base_url}/sessions/{sid}")
    witness.wait_for_function("() => document.body.dataset.liveState === 'live'")
    witness_before = int(witness.locator("#event-count").inner_text())
    ok(engine.advance(a["stateToken"], a["ackToken"], notes_markdown="built it"))
    witness.wait_for_function(
        f"() => Number(document.querySelector('#event-count').textContent) > {witness_before}",
        timeout=LIVE_TIMEOUT_MS,
    )
    assert page.locator("#event-count").inner_text() == paused_count
    witness_context.close()
    page.click("#live-toggle")
    page.wait_for_function(
        f"() => document.querySelector('#event-count').textContent !== '{paused_count}'",
        timeout=LIVE_TIMEOUT_MS,
    )
    assert page.evaluate("() => window.__notReloaded") is True
    assert page.locator("#pending-step").inner_text() == "Verify"
    assert not page.errors


def test_a_long_run_opens_its_folded_steps_in_place(
    page: Any, console: RunningConsole, store: Store, tmp_path: Path
) -> None:
    engine = store.engine(long_flow(tmp_path / "flows", 40))
    sid, r = long_run(engine, 30)
    _open(page, console, f"/sessions/{sid}")
    page.wait_for_function("() => document.body.dataset.liveState === 'live'")
    assert page.locator(".dag a.node").count() == 5, "the ends of the stretch and the tip"
    fold = page.locator("details[data-fold-id]")
    fold_id = fold.get_attribute("data-fold-id")
    fold.locator("summary").click()
    page.wait_for_function("() => document.querySelectorAll('.dag a.node').length === 31")
    assert "/sessions/" in page.url, "filled in place"
    assert "open=" not in page.url, "filled in place"
    screenshot(page, "session-long-run-fold-open")
    fold.locator("a.node", has_text="work-loop@7::act").click()
    panel = page.locator("#node-panel")
    panel.locator(".prompt-title", has_text="Act").wait_for()
    assert "Step 15 done." in panel.inner_text()

    before = int(page.locator("#event-count").inner_text())
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="one more"))
    page.wait_for_function(
        f"() => Number(document.querySelector('#event-count').textContent) > {before}",
        timeout=LIVE_TIMEOUT_MS,
    )
    page.locator(".dag a.node.preferred", has_text="work-loop@15::act").wait_for()
    still = page.locator(f"details[data-fold-id='{fold_id}'][open] a.node")
    assert still.count() > 0, "the opened stretch is still open and filled after the update"
    assert not page.errors


def test_polling_fallback_updates_too(page: Any, console: RunningConsole, engine: Engine) -> None:
    sid, r = started(engine)
    _open(page, console, f"/sessions/{sid}?live=poll")
    page.wait_for_function("() => document.body.dataset.liveState === 'polling'")
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    page.wait_for_function(
        "() => document.querySelector('#pending-step').textContent === 'Build'",
        timeout=LIVE_TIMEOUT_MS,
    )


def test_hostile_markdown_stays_inert(page: Any, console: RunningConsole, engine: Engine) -> None:
    hostile_goal = "<img src=x onerror=\"window.__pwned='context'\">"
    r = ok(engine.start_workflow("loopctl-flow", {"goal": hostile_goal}))
    ok(
        engine.advance(
            r["stateToken"],
            r["ackToken"],
            notes_markdown=HOSTILE_NOTES,
            artifacts=[
                loop_control("continue"),
                {"note": "<script>window.__pwned='art'</script>"},
            ],
        )
    )
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    _open(page, console, f"/sessions/{sid}")
    _node(page, "prep").first.click()
    panel = page.locator("#node-panel")
    panel.locator(".note").first.wait_for()
    panel.locator("details.artifact").first.click()
    note = panel.locator(".note").first
    assert "<script>window.__pwned = 'script'</script>" in note.inner_text(), "shown as text"
    assert note.locator("script, iframe, img, object, embed, style").count() == 0
    handlers = page.evaluate(
        """() => [...document.querySelectorAll('#node-panel *')]
              .flatMap(el => [...el.attributes].map(a => a.name))
              .filter(n => n.startsWith('on'))"""
    )
    assert handlers == []
    hrefs = page.evaluate(
        "() => [...document.querySelectorAll('#node-panel .markdown a')].map(a => a.href)"
    )
    assert hrefs == ["https://example.com/docs"]
    assert page.evaluate("() => window.__pwned === undefined")
    assert dialogs == []
    assert not page.errors
    screenshot(page, "hostile-notes")


def test_damaged_session_is_shown_read_only_with_a_banner(
    page: Any, console: RunningConsole, store: Store, engine: Engine
) -> None:
    sid, r = started(engine)
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned"))
    store.damage_tail(sid)
    store.noticed()
    _open(page, console, "/")
    row = page.locator(f"tr[data-session-id='{sid}']")
    assert "corrupt_tail" in row.locator(".health").inner_text()
    row.locator("a.title").click()
    banner = page.locator(".banner.damaged")
    banner.wait_for()
    assert "validated prefix" in banner.inner_text()
    assert "digest_mismatch" in banner.inner_text()
    assert page.locator(".dag a.node").count() >= 1
    page.locator(".dag a.node").first.click()
    page.locator("#panel-node-id").wait_for()
    screenshot(page, "damaged-session")


def test_export_with_and_without_the_secret(
    page: Any, console: RunningConsole, engine: Engine
) -> None:
    sid = forked_blocked_looped(engine)
    _open(page, console, f"/sessions/{sid}")
    assert "read-only" in page.locator("#auth-state").inner_text()
    page.click("#export-button")
    page.locator(".error-message").wait_for()
    assert "needs the console's secret" in page.locator(".error-message").inner_text()
    page.click("a.back")
    page.wait_for_url(f"{console.base_url}/")

    _open(page, console, f"/sessions/{sid}", secret=True)
    assert "actions enabled" in page.locator("#auth-state").inner_text()
    assert "secret=" not in page.url
    with page.expect_download() as download:
        page.click("#export-button")
    path = download.value.path()
    assert download.value.suggested_filename == f"{sid}.bundle.json"
    bundle = json.loads(Path(path).read_text())
    assert bundle["session"]["sessionId"] == sid


def test_sessions_list_pages(page: Any, console: RunningConsole, engine: Engine) -> None:
    made = {started(engine)[0] for _ in range(53)}
    _open(page, console, "/")
    first = set(
        page.locator("tr[data-session-id]").evaluate_all(
            "rows => rows.map(r => r.dataset.sessionId)"
        )
    )
    assert len(first) == 50
    screenshot(page, "sessions")
    page.click("a[rel=next]")
    page.wait_for_url("**/?cursor=*")
    second = set(
        page.locator("tr[data-session-id]").evaluate_all(
            "rows => rows.map(r => r.dataset.sessionId)"
        )
    )
    assert len(second) == 3
    assert first | second == made
    assert not first & second


def test_event_log_filters_in_the_browser(
    page: Any, console: RunningConsole, engine: Engine
) -> None:
    sid = forked_blocked_looped(engine)
    _open(page, console, f"/sessions/{sid}")
    page.click("text=Raw event log")
    page.wait_for_url(f"**/sessions/{sid}/events")
    total = page.locator("tr.event").count()
    page.check("input[name=blocked]")
    page.click("#event-filters button[type=submit]")
    page.wait_for_url("**blocked=1")
    blocked = page.locator("tr.event")
    assert 0 < blocked.count() < total
    assert blocked.count() == page.locator("tr.event.blocked").count()
    page.check("input[value=validation_performed]")
    page.click("#event-filters button[type=submit]")
    page.wait_for_url("**kind=validation_performed**")
    kinds = set(page.locator("tr.event").evaluate_all("rs => rs.map(r => r.className)"))
    assert kinds == {"event kind-validation_performed blocked"}
    page.locator("tr.event summary").first.click()
    assert '"valid": false' in page.locator("tr.event pre").first.inner_text()
    screenshot(page, "events")


def test_workflows_view_shows_sources_shadowing_and_problems(
    page: Any, data_dir: Path, tmp_path: Path
) -> None:
    custom = tmp_path / "flows"
    custom.mkdir()
    shutil.copy(REFERENCE / "workflows" / "probe-flow.json", custom / "probe-flow.json")
    (custom / "broken.json").write_text('{"id": "broken-flow", "name": "Broken", "steps": 3}')
    project = tmp_path / "home" / ".workrail" / "workflows"
    project.mkdir(parents=True)
    shutil.copy(REFERENCE / "workflows" / "probe-flow.json", project / "probe-flow.json")
    running = start_console(data_dir, custom)
    try:
        _open(page, running, "/workflows")
        rows = page.locator("table.workflows tbody tr")
        assert rows.filter(has_text="probe-flow").count() == 2
        assert "shadowed by" in page.locator("tr.shadowed").inner_text()
        assert "invalid" in page.locator("tr.invalid").inner_text()
        problems = page.locator(".invalid-file").inner_text()
        assert "broken.json" in problems
        assert "fix:" in problems
        screenshot(page, "workflows")
        page.click("tr.active a:has-text('probe-flow')")
        page.wait_for_url("**/workflows/probe-flow")
        assert page.locator("g.wg-box").count() == 3
        assert "shadowed" in page.locator(".notice").inner_text()
        screenshot(page, "workflow")
    finally:
        running.stop()
        running.backend.close()


def test_unknown_session_is_a_404_page_with_a_link_back(page: Any, console: RunningConsole) -> None:
    response = page.goto(f"{console.base_url}/sessions/sess_{'a' * 26}")
    assert response is not None
    assert response.status == 404
    assert "no session" in page.locator(".error-message").inner_text()
    page.click("a.back")
    page.wait_for_url(f"{console.base_url}/")
    screenshot(page, "not-found")


@pytest.mark.parametrize("path", ["/", "/workflows"])
def test_no_script_errors_on_plain_pages(page: Any, console: RunningConsole, path: str) -> None:
    _open(page, console, path)
    assert not page.errors


def test_pages_read_as_people_read_them(page: Any, console: RunningConsole, engine: Engine) -> None:
    """Plain-text titles, a done node that says its output was accepted, relative dates with
    the exact time on hover, and ids that never wrap."""
    r = ok(engine.start_workflow("probe-flow", {"goal": "**Goal**: ship the `parser`"}))
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    ok(engine.advance(r["stateToken"], r["ackToken"], notes_markdown="planned it"))
    page.set_viewport_size({"width": 640, "height": 900})
    _open(page, console, "/")
    row = page.locator(f"tr[data-session-id='{sid}']")
    assert row.locator("a.title").inner_text() == "Goal: ship the parser"
    when = row.locator("td.when time")
    assert when.inner_text() == "just now"
    exact = when.get_attribute("title") or ""
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$", exact), exact
    assert when.get_attribute("datetime") == exact
    for ident in (row.locator(".ident").first, row.locator(".ident").last):
        style = ident.evaluate("e => getComputedStyle(e).whiteSpace")
        assert style == "nowrap"
        box = ident.bounding_box()
        assert box is not None, "on one line"
        assert box["height"] < 24, "on one line"

    _open(page, console, f"/sessions/{sid}")
    assert "**" not in page.locator("h1").inner_text()
    assert page.locator("#session-header time").count() == 1
    _node(page, "plan").first.click()
    panel = page.locator("#node-panel")
    panel.locator(".prompt-title", has_text="Plan").wait_for()
    assert panel.locator("h2 .status").inner_text() == "done"
    text = panel.inner_text()
    assert "Accepted" in text
    assert "No validation ran" not in text
    assert page.locator(".dag a.node.state-done").count() == 1
    assert not page.errors
