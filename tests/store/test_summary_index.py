"""The files backend's summary index: disposable, versioned, and never stale — whoever
wrote the logs, whatever happened to the index file."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from tests.engine.helpers import tree_digest
from tests.store.contract import append, engine_over
from tests.store.plans import Chain
from tests.store.test_local_store import indexed_rows
from workrail.store.local.backend import LocalBackend
from workrail.store.local.layout import Layout
from workrail.store.local.session_store import TRASH_PREFIX, LocalSessionStore
from workrail.store.ports import CandidateQuery, SessionFilter

INDEX = Path("index") / "sessions.sqlite3"


def _ids(backend: LocalBackend, **kw: object) -> set[str]:
    page = backend.query.page(SessionFilter(archived="include", **kw), limit=500)  # type: ignore[arg-type]
    return {s.session_id for s in page.unwrap().summaries}


def _foreign_store(data_dir: Path) -> LocalSessionStore:
    """A writer that never tells the index (another process, or the reference)."""
    return LocalSessionStore(Layout(data_dir))


def test_appends_from_elsewhere_are_seen_on_the_next_query(data_dir: Path) -> None:
    backend = LocalBackend.open(data_dir)
    assert _ids(backend) == set()
    chain = Chain()
    append(_foreign_store(data_dir), chain.sess, chain.start())
    assert _ids(backend) == {chain.sess}
    assert backend.query.get([chain.sess]).unwrap()[chain.sess].event_count == 3
    append(_foreign_store(data_dir), chain.sess, chain.advance())
    assert backend.query.get([chain.sess]).unwrap()[chain.sess].event_count == 6
    shutil.rmtree(data_dir / "sessions" / chain.sess)
    assert _ids(backend) == set()


def test_a_missing_or_outdated_or_damaged_index_is_rebuilt(data_dir: Path) -> None:
    backend = LocalBackend.open(data_dir)
    engine = engine_over(backend)
    r = engine.start_workflow("probe-flow", {"goal": "keep me"}).unwrap()
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    kept = indexed_rows(backend)
    assert set(kept) == {sid}

    (data_dir / INDEX).unlink()
    assert _ids(LocalBackend.open(data_dir)) == {sid}

    conn = sqlite3.connect(data_dir / INDEX)
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'projection'")
    conn.execute("UPDATE summaries SET record = '{\"v\": 0}'")
    conn.commit()
    conn.close()
    assert _ids(LocalBackend.open(data_dir)) == {sid}
    assert indexed_rows(LocalBackend.open(data_dir)) == kept

    (data_dir / INDEX).write_bytes(b"this is not a database" * 100)
    assert _ids(LocalBackend.open(data_dir)) == {sid}
    assert indexed_rows(LocalBackend.open(data_dir)) == kept


def test_candidates_never_write_even_when_the_index_is_stale_or_missing(data_dir: Path) -> None:
    backend = LocalBackend.open(data_dir)
    engine = engine_over(backend)
    engine.start_workflow("probe-flow", {"goal": "index me"}).unwrap()
    backend.close()  # its row is written
    chain = Chain()
    append(_foreign_store(data_dir), chain.sess, chain.start())  # the index does not know it
    fresh = LocalBackend.open(data_dir)
    before = tree_digest(data_dir)
    found = fresh.query.candidates(CandidateQuery(session_id=chain.sess)).unwrap()
    assert chain.sess in {s.session_id for s in found}
    assert tree_digest(data_dir) == before

    (data_dir / INDEX).unlink()
    before = tree_digest(data_dir)
    rebuilt = LocalBackend.open(data_dir).query.candidates(CandidateQuery(tokens=("index",)))
    assert len(rebuilt.unwrap()) == 2
    assert tree_digest(data_dir) == before
    assert not (data_dir / INDEX).exists()


def test_a_read_only_data_directory_still_answers(data_dir: Path) -> None:
    backend = LocalBackend.open(data_dir)
    engine = engine_over(backend)
    r = engine.start_workflow("probe-flow").unwrap()
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    backend.close()  # its row is written
    (data_dir / INDEX).unlink()
    index_dir = data_dir / "index"
    index_dir.chmod(0o500)
    try:
        if os.access(index_dir, os.W_OK):  # root ignores modes: make the path unusable
            index_dir.chmod(0o700)
            shutil.rmtree(index_dir)
            index_dir.write_bytes(b"")  # a file where the directory should be
        assert _ids(LocalBackend.open(data_dir)) == {sid}
    finally:
        if index_dir.is_dir():
            index_dir.chmod(0o700)


def test_reference_sessions_are_summarised(reference_data: Path) -> None:
    backend = LocalBackend.open(reference_data)
    summaries = {s.session_id: s for s in backend.query.page(SessionFilter()).unwrap().summaries}
    probe = summaries["sess_akuobhxpaal3j6jgnpsnzywq2u"]
    assert probe.workflow_name == "Probe Flow"
    assert probe.is_healthy
    blocked = summaries["sess_xitzhouag5y6h6k7bbzrv6k6ly"]
    assert blocked.status == "blocked"
    assert blocked.primary is not None
    assert blocked.primary.pending_step_id == "write"


def test_a_damaged_session_is_listed_with_its_health(data_dir: Path) -> None:
    chain = Chain()
    store = _foreign_store(data_dir)
    append(store, chain.sess, chain.start())
    append(store, chain.sess, chain.advance())
    events = data_dir / "sessions" / chain.sess / "events"
    latest = max(p for p in events.iterdir() if p.name.endswith(".jsonl"))
    raw = bytearray(latest.read_bytes())
    raw[len(raw) // 2] ^= 1
    latest.write_bytes(bytes(raw))
    summary = LocalBackend.open(data_dir).query.get([chain.sess]).unwrap()[chain.sess]
    assert summary.health == "corrupt_tail"
    assert summary.event_count == 3  # the validated prefix
    assert _ids(LocalBackend.open(data_dir), healthy_only=True) == set()


def test_an_interrupted_deletion_is_finished_and_never_listed(data_dir: Path) -> None:
    backend = LocalBackend.open(data_dir)
    chain = Chain()
    append(backend.sessions, chain.sess, chain.start())
    aside = data_dir / "sessions" / f"{TRASH_PREFIX}{chain.sess}-0000"
    os.rename(data_dir / "sessions" / chain.sess, aside)  # a crash right after the rename
    assert _ids(backend) == set()
    assert chain.sess not in backend.sessions.list_ids().unwrap()
    backend.sessions.sweep_trash()
    assert not aside.exists()


def test_lifecycle_record_sits_beside_the_log_and_bad_records_read_as_default(
    data_dir: Path,
) -> None:
    backend = LocalBackend.open(data_dir)
    chain = Chain()
    append(backend.sessions, chain.sess, chain.start())
    from workrail.core.lifecycle import SessionLifecycle

    backend.lifecycle.put(chain.sess, SessionLifecycle(workspace_path="/src/app"))
    path = data_dir / "sessions" / chain.sess / "lifecycle.json"
    assert path.read_bytes() == (
        b'{"archived":false,"archivedAt":null,"v":1,"workspacePath":"/src/app"}'
    )
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert backend.query.get([chain.sess]).unwrap()[chain.sess].workspace_path == "/src/app"
    path.write_bytes(b"{not json")
    assert backend.lifecycle.get(chain.sess).unwrap() == SessionLifecycle()
    assert backend.query.get([chain.sess]).unwrap()[chain.sess].workspace_path is None


def test_this_process_s_appends_are_written_before_its_next_query_or_at_close(
    data_dir: Path,
) -> None:
    """An append only notes its session: the row is projected before this process's next
    query (folding only the new events, however long the session) or when the index is
    closed. Another process meanwhile finds the row stale and projects it itself."""
    backend = LocalBackend.open(data_dir)
    chain = Chain()
    append(backend.sessions, chain.sess, chain.start())
    assert not (data_dir / INDEX).exists()  # nothing written on the append's path
    assert backend.query.get([chain.sess]).unwrap()[chain.sess].event_count == 3
    for _ in range(100):
        append(backend.sessions, chain.sess, chain.advance())
    count = backend.sessions.read(chain.sess, lambda log: log.count).unwrap()
    assert count > 256
    other = LocalBackend.open(data_dir)
    assert other.query.get([chain.sess]).unwrap()[chain.sess].event_count == count
    other.close()
    append(backend.sessions, chain.sess, chain.advance())
    assert _ids(backend) == {chain.sess}  # a query writes what was pending first
    raw = sqlite3.connect(data_dir / INDEX)
    try:
        (record,) = raw.execute("SELECT record FROM summaries").fetchone()
    finally:
        raw.close()
    assert json.loads(record)["eventCount"] == count + 3
    append(backend.sessions, chain.sess, chain.advance())
    backend.close()
    assert indexed_rows(LocalBackend.open(data_dir))[chain.sess]["record"]["eventCount"] == (
        count + 6
    )


def test_rows_of_many_sessions_are_written_once_too_many_wait(data_dir: Path) -> None:
    """A server that writes many sessions and is never queried: past `PENDING_MAX`
    waiting sessions, the write that noted the last one writes all their rows."""
    from workrail.store.local.summary_index import PENDING_MAX

    backend = LocalBackend.open(data_dir)
    chains = [Chain() for _ in range(PENDING_MAX + 1)]
    for chain in chains[:-1]:
        append(backend.sessions, chain.sess, chain.start())
    assert not (data_dir / INDEX).exists()
    append(backend.sessions, chains[-1].sess, chains[-1].start())
    raw = sqlite3.connect(data_dir / INDEX)
    try:
        rows = {sid for (sid,) in raw.execute("SELECT session_id FROM summaries")}
    finally:
        raw.close()
    assert rows == {chain.sess for chain in chains}


def test_a_query_waits_for_no_append_and_an_append_for_no_query(data_dir: Path) -> None:
    """A query holding the index projects a session that is being appended to: the append
    must not wait for the index while it holds the session (it once did, and the two
    waited for each other)."""
    import threading

    backend = LocalBackend.open(data_dir)
    chain = Chain()
    append(backend.sessions, chain.sess, chain.start())
    assert _ids(backend) == {chain.sess}
    with backend.query._mutex:  # a query of another thread, mid-way
        appended = threading.Thread(
            target=append, args=(backend.sessions, chain.sess, chain.advance()), daemon=True
        )
        appended.start()
        appended.join(10)
        assert not appended.is_alive()
        assert backend.query.get([chain.sess]).unwrap()[chain.sess].event_count == 6


def test_terms_another_connection_wrote_are_replaced_not_assumed(data_dir: Path) -> None:
    """A connection writes only the terms that changed since its own last write of a row,
    and only while the row is still that write: another process may project the session
    in between (a query that read the log as the next append landed) at the very identity
    this connection remembers, with other terms. Its next append must not build on them."""
    from dataclasses import replace

    backend = LocalBackend.open(data_dir)
    engine = engine_over(backend)
    current = engine.start_workflow("probe-flow", {"goal": "Tune the parser"}).unwrap()
    sid = engine.deps.codec.parse_state(current["stateToken"]).unwrap().session_id
    current = engine.advance(
        current["stateToken"], current["ackToken"], notes_markdown="alpha"
    ).unwrap()
    ident = indexed_rows(backend)[sid]["identity"]

    other = LocalBackend.open(data_dir)  # another process's connection to the index
    summary = other.query.get([sid]).unwrap()[sid]
    conn = other.query._open()
    other.query._put(conn, replace(summary, words=summary.words | {"intruder"}), ident)
    conn.commit()
    assert "intruder" in indexed_rows(other)[sid]["corpus"].split()

    engine.advance(current["stateToken"], current["ackToken"], notes_markdown="beta").unwrap()
    kept = indexed_rows(backend)[sid]["corpus"].split()
    assert "intruder" not in kept
    assert {"alpha", "beta", "parser"} <= set(kept)
    other.query.rebuild().unwrap()
    assert indexed_rows(other)[sid]["corpus"].split() == kept


def test_a_lifecycle_change_on_a_pending_session_reaches_another_process(
    data_dir: Path,
) -> None:
    """Process A appends (its row pending), process B's query projects the session, then
    A records the workspace (as start_workflow does right after its append): B must not
    keep its row, workspace-less, as current (it once did, until A queried or closed)."""
    from workrail.core.lifecycle import SessionLifecycle

    a = LocalBackend.open(data_dir)
    b = LocalBackend.open(data_dir)
    chain = Chain()
    append(a.sessions, chain.sess, chain.start())
    assert _ids(b) == {chain.sess}  # B projects it and writes its row
    a.lifecycle.put(chain.sess, SessionLifecycle(workspace_path="/w/proj")).unwrap()
    assert _ids(b, workspace="/w/proj") == {chain.sess}
    found = b.query.candidates(CandidateQuery(workspace="/w/proj")).unwrap()
    assert chain.sess in {s.session_id for s in found}


def test_a_lifecycle_change_never_stamps_a_row_another_process_made_stale(
    data_dir: Path,
) -> None:
    """An archive after another process's append: the row is projected again, not patched
    under the new identity with the old event count."""
    from workrail.core.lifecycle import SessionLifecycle

    backend = LocalBackend.open(data_dir)
    chain = Chain()
    append(backend.sessions, chain.sess, chain.start())
    assert backend.query.get([chain.sess]).unwrap()[chain.sess].event_count == 3
    append(_foreign_store(data_dir), chain.sess, chain.advance())
    backend.lifecycle.put(chain.sess, SessionLifecycle(archived=True)).unwrap()
    summary = backend.query.get([chain.sess]).unwrap()[chain.sess]
    assert summary.event_count == 6
    assert summary.archived
