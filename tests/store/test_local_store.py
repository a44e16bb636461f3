from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

from tests.engine.hold_lock_child import writer_in_another_process
from tests.store.contract import (
    BackendContract,
    ProjectionPropertyContract,
    SessionStoreContract,
    append,
    events_of,
)
from tests.store.plans import Chain
from workrail.core.canonical import digest_file_name
from workrail.store.local.backend import LocalBackend
from workrail.store.local.session_store import TRASH_PREFIX, LocalSessionStore

ROOT = Path(__file__).resolve().parents[2]


class TestLocalSessionStore(SessionStoreContract):
    @pytest.fixture
    def store(self, data_dir: Path) -> Any:
        return LocalBackend.open(data_dir).sessions

    @pytest.fixture
    def backend_env(self, data_dir: Path) -> dict[str, str]:
        return {"WORKRAIL_DATA_DIR": str(data_dir), "WORKRAIL_STORE_URL": ""}

    @pytest.fixture
    def watch(self, data_dir: Path) -> Any:
        return LocalBackend.open(data_dir).watch

    @pytest.fixture
    def reopen(self, data_dir: Path) -> Any:
        return lambda: LocalBackend.open(data_dir).sessions

    @pytest.fixture
    def damage(self, data_dir: Path) -> Any:
        def flip_a_byte_of_the_latest_segment(session_id: str) -> None:
            events = data_dir / "sessions" / session_id / "events"
            latest = max(p for p in events.iterdir() if p.name.endswith(".jsonl"))
            raw = bytearray(latest.read_bytes())
            raw[len(raw) // 2] ^= 1
            latest.write_bytes(bytes(raw))

        return flip_a_byte_of_the_latest_segment

    @pytest.fixture
    def orphan(self, data_dir: Path) -> Any:
        def leave_an_unattested_segment(session_id: str, first: int) -> None:
            events = data_dir / "sessions" / session_id / "events"
            (events / f"{first:08d}-{first + 2:08d}.jsonl").write_bytes(b"not attested\n")
            (events / f"{first:08d}-{first + 2:08d}.jsonl.tmp").write_bytes(b"half")

        return leave_an_unattested_segment

    @pytest.fixture
    def hold_writer(self, data_dir: Path) -> Any:
        return writer_in_another_process(data_dir)


class TestLocalBackend(BackendContract, ProjectionPropertyContract):
    @pytest.fixture
    def backend(self, data_dir: Path) -> Any:
        return LocalBackend.open(data_dir)

    @pytest.fixture
    def reopen_backend(self, data_dir: Path) -> Any:
        return lambda: LocalBackend.open(data_dir)

    @pytest.fixture
    def fresh_backend(self, tmp_path: Path) -> Any:
        made = iter(range(1_000_000))
        return lambda: LocalBackend.open(tmp_path / f"data-{next(made)}")

    @pytest.fixture
    def hold_writer(self, data_dir: Path) -> Any:
        return writer_in_another_process(data_dir)

    @pytest.fixture
    def indexed(self) -> Any:
        return indexed_rows

    @pytest.fixture
    def damage_content(self, data_dir: Path) -> Any:
        def overwrite(ref: str) -> None:
            path = data_dir / "snapshots" / digest_file_name(ref)
            path.write_bytes(path.read_bytes().replace(b'"kind"', b'"kine"', 1))

        return overwrite


def indexed_rows(backend: LocalBackend) -> dict[str, dict[str, Any]]:
    """The index's rows once `backend` has written what its own appends left pending
    (closing its connection), without the sync a query would do first."""
    import sqlite3

    backend.query.close()
    path = backend.layout.root / "index" / "sessions.sqlite3"
    if not path.exists():
        return {}
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT s.session_id, s.identity, s.record, "
            "(SELECT group_concat(term, ' ') FROM (SELECT term FROM terms t WHERE t.id = s.id "
            "ORDER BY term)) FROM summaries s"
        ).fetchall()
        runs = conn.execute("SELECT run_id, session_id FROM runs").fetchall()
    finally:
        conn.close()
    out = {
        sid: {"identity": ident, "record": json.loads(rec), "corpus": text}
        for sid, ident, rec, text in rows
    }
    for run_id, sid in runs:
        out.setdefault(sid, {}).setdefault("runs", []).append(run_id)
    for entry in out.values():
        entry.get("runs", []).sort()
    return out


def _fresh(data_dir: Path) -> LocalSessionStore:
    """A new store instance: no in-process cache, so it reads what is on disk."""
    return LocalBackend.open(data_dir).sessions


def _grown(data_dir: Path, advances: int = 2) -> tuple[Chain, Path]:
    store = _fresh(data_dir)
    chain = Chain()
    append(store, chain.sess, chain.start())
    for _ in range(advances):
        append(store, chain.sess, chain.advance())
    return chain, data_dir / "sessions" / chain.sess


def test_layout_and_modes(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    assert sorted(p.name for p in (sdir / "events").iterdir()) == [
        "00000000-00000002.jsonl",
        "00000003-00000005.jsonl",
    ]
    for f in [sdir / "manifest.jsonl", *(sdir / "events").iterdir()]:
        assert f.stat().st_mode & 0o777 == 0o600
    lines = (sdir / "manifest.jsonl").read_bytes().splitlines()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds == ["segment_closed", "snapshot_pinned", "segment_closed", "snapshot_pinned"]
    first = json.loads(lines[0])
    seg = (sdir / first["segmentRelPath"]).read_bytes()
    assert first["bytes"] == len(seg)


def test_orphan_segment_is_ignored(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    (sdir / "events" / "00000099-00000099.jsonl").write_bytes(b"garbage\n")
    (sdir / "events" / "00000006-00000008.jsonl.tmp").write_bytes(b"garbage")
    store = _fresh(data_dir)
    assert store.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(store, chain.sess)) == 6


def test_orphan_with_the_next_name_is_replaced_by_the_next_append(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    (sdir / "events" / "00000006-00000008.jsonl").write_bytes(b"orphan\n")
    store = _fresh(data_dir)
    append(store, chain.sess, chain.advance())
    assert _fresh(data_dir).health(chain.sess).unwrap().kind == "healthy"


def test_digest_mismatch_is_corrupt_tail_and_never_repaired(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 2)
    seg = sdir / "events" / "00000003-00000005.jsonl"
    data = bytearray(seg.read_bytes())
    data[10] ^= 0x01
    seg.write_bytes(bytes(data))
    before = {p: p.read_bytes() for p in sdir.rglob("*") if p.is_file()}
    store = _fresh(data_dir)
    health = store.health(chain.sess).unwrap()
    assert health.kind == "corrupt_tail"
    assert health.reason is not None
    assert health.reason.code == "digest_mismatch"
    assert append(store, chain.sess, chain.advance()).failure().code == "SESSION_NOT_HEALTHY"
    assert {p: p.read_bytes() for p in sdir.rglob("*") if p.is_file()} == before


def test_missing_segment_is_corrupt_tail(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    (sdir / "events" / "00000003-00000005.jsonl").unlink()
    health = _fresh(data_dir).health(chain.sess).unwrap()
    assert (health.kind, health.reason and health.reason.code) == (
        "corrupt_tail",
        "missing_attested_segment",
    )


def test_first_manifest_line_not_json_is_corrupt_head(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    manifest = sdir / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(b"{not json\n" + b"".join(lines[1:]))
    health = _fresh(data_dir).health(chain.sess).unwrap()
    assert health.kind == "corrupt_head"
    assert health.reason is not None
    assert health.reason.code == "non_contiguous_indices"


def test_middle_manifest_line_not_json_is_corrupt_tail(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 2)
    manifest = sdir / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    lines[2] = b"{broken\n"
    manifest.write_bytes(b"".join(lines))
    health = _fresh(data_dir).health(chain.sess).unwrap()
    assert health.kind == "corrupt_tail"


def test_unknown_schema_version(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    manifest = sdir / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[2])
    record["v"] = 2
    lines[2] = json.dumps(record).encode() + b"\n"
    manifest.write_bytes(b"".join(lines))
    health = _fresh(data_dir).health(chain.sess).unwrap()
    assert health.kind == "unknown_version"
    assert health.reason is not None
    assert health.reason.code == "unknown_schema_version"


def test_missing_pin_of_an_earlier_group_is_corrupt(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 2)
    manifest = sdir / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    del lines[3]  # the pin of the second group; the third group follows it
    for i, line in enumerate(lines):  # keep manifestIndex contiguous so only the pin is wrong
        record = json.loads(line)
        record["manifestIndex"] = i
        lines[i] = json.dumps(record, separators=(",", ":"), sort_keys=True).encode() + b"\n"
    manifest.write_bytes(b"".join(lines))
    health = _fresh(data_dir).health(chain.sess).unwrap()
    assert health.kind == "corrupt_tail"
    assert health.reason is not None
    assert health.reason.message.startswith("Missing snapshot_pinned for introduced snapshotRef")


def test_final_group_without_its_pin_is_an_unacknowledged_append(data_dir: Path) -> None:
    """segment_closed durable but its pins not: what a crash between the two leaves (the
    reference bricks the session here). The append was never acknowledged: it is absent,
    and cut off under the lock before the next append."""
    chain, sdir = _grown(data_dir, 1)
    manifest = sdir / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(b"".join(lines[:3]))
    store = _fresh(data_dir)
    assert store.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(store, chain.sess)) == 3
    chain.next_index, chain.tip = 3, events_of(store, chain.sess)[2].node_id
    assert not append(store, chain.sess, chain.advance()).unwrap().deduplicated
    assert len(events_of(_fresh(data_dir), chain.sess)) == 6
    assert _fresh(data_dir).health(chain.sess).unwrap().kind == "healthy"


def test_torn_tail_never_hides_a_corrupt_final_segment(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    seg = sdir / "events" / "00000003-00000005.jsonl"
    raw = bytearray(seg.read_bytes())
    raw[12] ^= 1
    seg.write_bytes(bytes(raw))
    manifest = sdir / "manifest.jsonl"
    intact = manifest.read_bytes() + b'{"v":1,"manif'
    manifest.write_bytes(intact)
    store = _fresh(data_dir)
    health = store.health(chain.sess).unwrap()
    assert health.kind == "corrupt_tail"
    assert health.reason is not None
    assert health.reason.code == "digest_mismatch"
    assert append(store, chain.sess, chain.advance()).failure().code == "SESSION_NOT_HEALTHY"
    assert manifest.read_bytes() == intact  # nothing cut, nothing repaired


def test_blank_lines_at_the_end_of_the_manifest_do_not_confuse_the_cache(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    manifest = sdir / "manifest.jsonl"
    manifest.write_bytes(manifest.read_bytes() + b"\n\n")
    mine = _fresh(data_dir)
    append(mine, chain.sess, chain.advance())
    append(_fresh(data_dir), chain.sess, chain.advance())
    assert mine.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(mine, chain.sess)) == 12


def test_torn_final_manifest_line_is_absent_and_cut_before_next_append(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    manifest = sdir / "manifest.jsonl"
    intact = manifest.read_bytes()
    manifest.write_bytes(intact + b'{"bytes":12,"zzTORN')
    store = _fresh(data_dir)
    assert store.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(store, chain.sess)) == 6
    assert manifest.read_bytes().endswith(b'"zzTORN')  # reads never rewrite
    append(store, chain.sess, chain.advance())
    assert manifest.read_bytes().startswith(intact)
    assert b"zzTORN" not in manifest.read_bytes()
    assert len(events_of(_fresh(data_dir), chain.sess)) == 9


def test_torn_group_with_complete_segment_line_drops_the_whole_group(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    manifest = sdir / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    # segment_closed complete, its pin torn mid-line
    manifest.write_bytes(b"".join(lines[:3]) + lines[3][:20])
    store = _fresh(data_dir)
    assert store.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(store, chain.sess)) == 3


def test_prefix_load_salvages_up_to_the_first_bad_segment(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 2)
    seg = sdir / "events" / "00000006-00000008.jsonl"
    seg.write_bytes(seg.read_bytes().replace(b"node_created", b"node_createx", 1))
    prefix = _fresh(data_dir).load_prefix(chain.sess).unwrap()
    assert not prefix.complete
    assert prefix.reason is not None
    assert prefix.reason.code == "digest_mismatch"
    assert [e.eventIndex for e in prefix.events] == list(range(6))


def test_warm_cache_sees_appends_from_another_store_instance(data_dir: Path) -> None:
    chain, _ = _grown(data_dir, 1)
    reader = _fresh(data_dir)
    assert len(events_of(reader, chain.sess)) == 6
    append(_fresh(data_dir), chain.sess, chain.advance())
    assert len(events_of(reader, chain.sess)) == 9


def test_reference_sessions_load_healthy(reference_data: Path) -> None:
    store = _fresh(reference_data)
    ids = store.list_ids().unwrap()
    assert ids == ["sess_akuobhxpaal3j6jgnpsnzywq2u", "sess_xitzhouag5y6h6k7bbzrv6k6ly"]
    for sid in ids:
        assert store.health(sid).unwrap().kind == "healthy"


def test_reference_session_accepts_a_python_append(reference_data: Path) -> None:
    from tests.store.plans import advance_plan, new_id

    store = _fresh(reference_data)
    sid = "sess_akuobhxpaal3j6jgnpsnzywq2u"
    log = store.read(sid, lambda log: log).unwrap()
    run = next(iter(log.index.runs))
    tip = log.index.preferred_tip(run)
    assert tip is not None
    plan = advance_plan(sid, run, log.count, tip, new_id("node"), new_id("attempt"))
    assert append(store, sid, plan).unwrap().deduplicated is False
    assert _fresh(reference_data).health(sid).unwrap().kind == "healthy"


def test_no_lock_file_is_left_after_a_write(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 1)
    assert not (sdir / ".lock").exists()


def test_an_empty_stale_lock_file_does_not_block(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 0)
    (sdir / ".lock").write_bytes(b"")  # what a crashed writer of ours may leave
    assert not append(_fresh(data_dir), chain.sess, chain.advance()).unwrap().deduplicated
    assert os.stat(sdir / "manifest.jsonl").st_size > 0


def test_a_reference_owner_record_means_the_session_is_busy(data_dir: Path) -> None:
    chain, sdir = _grown(data_dir, 0)
    owner = b'{"v":1,"sessionId":"%s","pid":1,"startedAtMs":1}' % chain.sess.encode()
    (sdir / ".lock").write_bytes(owner)
    result = append(_fresh(data_dir), chain.sess, chain.advance())
    assert result.failure().code == "SESSION_LOCKED"
    assert result.failure().retryable
    assert (sdir / ".lock").read_bytes() == owner  # never broken by us


def test_the_session_cache_is_bounded_by_the_events_it_holds(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("workrail.store.local.session_store.CACHED_EVENTS", 10)
    store = _fresh(data_dir)
    chains = [Chain() for _ in range(4)]
    for chain in chains:
        append(store, chain.sess, chain.start())
        append(store, chain.sess, chain.advance())
    assert store._cache.held_events <= 10
    assert store._cache.get(chains[-1].sess) is not None  # the most recent is kept
    for chain in chains:  # evicted sessions load again from disk
        assert store.health(chain.sess).unwrap().kind == "healthy"


def test_list_ids_pages_fill_past_entries_that_are_not_sessions(data_dir: Path) -> None:
    """A page stops checking manifests once it is full, so whatever it skips (debris of an
    interrupted first write, a removal renamed aside, stray names) must never shorten it."""
    store = _fresh(data_dir)
    chains = sorted((Chain() for _ in range(7)), key=lambda chain: chain.sess)
    sessions = [chain.sess for chain in chains]
    for chain in chains:
        append(store, chain.sess, chain.start())
    root = data_dir / "sessions"
    for _ in range(5):
        (root / Chain().sess / "events").mkdir(parents=True)  # no manifest: not a session
    (root / f"{TRASH_PREFIX}{sessions[0]}-0000").mkdir()
    (root / "sess_not-an-id").mkdir()
    (root / "README").write_text("stray")
    pages, after = [], None
    while True:
        page = store.list_ids(after=after, limit=3).unwrap()
        pages.append(page)
        if len(page) < 3:
            break
        after = page[-1]
    assert pages == [sessions[0:3], sessions[3:6], sessions[6:]]
    assert store.list_ids(after=sessions[6]).unwrap() == []
    assert store.list_ids(limit=0).unwrap() == []


def test_an_interrupted_removal_is_finished_when_the_backend_opens(data_dir: Path) -> None:
    store = _fresh(data_dir)
    chain = Chain()
    append(store, chain.sess, chain.start())
    aside = data_dir / "sessions" / f"{TRASH_PREFIX}{chain.sess}-0000"
    os.rename(data_dir / "sessions" / chain.sess, aside)  # killed right after the rename
    kept = Chain()
    append(store, kept.sess, kept.start())
    LocalBackend.open(data_dir)
    assert not aside.exists()
    assert sorted(os.listdir(data_dir / "sessions")) == [kept.sess]
    assert store.health(kept.sess).unwrap().kind == "healthy"


def test_a_log_damaged_under_the_writer_is_an_error_value_not_an_exception(
    data_dir: Path,
) -> None:
    """`txn.log` cannot return an error, so it shows the state last validated under this
    writer; the append that follows reports the damage."""
    store = _fresh(data_dir)
    chain = Chain()
    append(store, chain.sess, chain.start())
    plan = chain.advance()
    seen: list[int] = []

    def damage_then_append(txn: Any) -> Any:
        with open(data_dir / "sessions" / chain.sess / "manifest.jsonl", "ab") as f:
            f.write(b'{"not": "a record"}\n')
        seen.append(txn.log.count)
        return txn.append(plan)

    result = store.write(chain.sess, damage_then_append)
    assert seen == [3]
    assert result.failure().code == "SESSION_NOT_HEALTHY"
    assert result.failure().health is not None


def test_the_lock_registry_keeps_only_a_bounded_number_of_idle_locks(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workrail.store.local.lock import SessionLockRegistry

    IDLE_KEPT = 8
    monkeypatch.setattr("workrail.store.local.lock.IDLE_KEPT", IDLE_KEPT)
    store = _fresh(data_dir)
    for _ in range(IDLE_KEPT + 12):
        chain = Chain()
        append(store, chain.sess, chain.start())
        assert store.health(chain.sess).unwrap().kind == "healthy"
    writers, states = SessionLockRegistry.shared().kept
    assert writers <= IDLE_KEPT
    assert states <= IDLE_KEPT


def test_evicting_idle_locks_never_lets_two_writers_in(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for a single idle lock, locks come and go all the time; still at most
    one thread at a time holds a session's writer, and every one gets its turn."""
    import threading

    from workrail.store.local.lock import SessionLockRegistry

    monkeypatch.setattr("workrail.store.local.lock.IDLE_KEPT", 1)
    registry = SessionLockRegistry()
    dirs = [data_dir / "sessions" / Chain().sess for _ in range(3)]
    inside = dict.fromkeys(dirs, 0)
    wrote = dict.fromkeys(dirs, 0)
    overlaps: list[Path] = []
    mutex = threading.Lock()
    barrier = threading.Barrier(6)

    def work(n: int) -> None:
        barrier.wait()
        for i in range(200):
            d = dirs[(n + i) % len(dirs)]
            with registry.writer(d) as lock:
                if lock.acquire() is not None:
                    continue  # busy: another thread holds it, as it should
                try:
                    with mutex:
                        inside[d] += 1
                        if inside[d] > 1:
                            overlaps.append(d)
                    with mutex:
                        inside[d] -= 1
                        wrote[d] += 1
                finally:
                    lock.release()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert overlaps == []
    assert all(count > 0 for count in wrote.values())
    assert registry.kept[0] <= 1


@pytest.mark.parametrize("errno_code", [errno.EIO, errno.ENOSPC])
def test_a_failure_after_the_new_manifest_is_linked_never_deletes_its_segments(
    data_dir: Path, errno_code: int
) -> None:
    """Creating a session publishes it with link(2); if the steps after it (dropping the
    staged name, the directory fsync) fail, the session is already visible and must stay
    whole: the failure is reported, retryable, and nothing it names is removed."""

    def fail_after_link(step: str) -> None:
        if step == "after_link":
            raise OSError(errno_code, os.strerror(errno_code), "simulated")

    store = LocalBackend.open(data_dir, faults=fail_after_link).sessions
    chain = Chain()
    plan = chain.start()
    failed = append(store, chain.sess, plan).failure()
    assert (failed.code, failed.retryable) == ("STORAGE_FAULT", True)
    fresh = _fresh(data_dir)
    assert fresh.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(fresh, chain.sess)) == 3
    assert append(fresh, chain.sess, plan).unwrap().deduplicated is True  # the retry
    assert isinstance(append(fresh, chain.sess, chain.advance()), Success)
    assert len(events_of(_fresh(data_dir), chain.sess)) == 6


def test_creating_a_session_fsyncs_no_empty_file(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new session's staged manifest is created holding its first group: an fsync of
    it while empty would be one more disk flush on every start, making nothing durable."""
    real_fsync = os.fsync
    synced: list[tuple[bool, int]] = []

    def recording_fsync(fd: int) -> None:
        st = os.fstat(fd)
        synced.append((stat.S_ISREG(st.st_mode), st.st_size))
        real_fsync(fd)

    store = _fresh(data_dir)
    chain = Chain()
    monkeypatch.setattr(os, "fsync", recording_fsync)
    append(store, chain.sess, chain.start())
    monkeypatch.undo()
    files = [size for regular, size in synced if regular]
    assert len(files) == 2  # the segment, then the staged manifest
    assert all(size > 0 for size in files)
    assert _fresh(data_dir).health(chain.sess).unwrap().kind == "healthy"


@pytest.mark.parametrize("debris", ["garbage", "symlink"])
def test_debris_of_an_interrupted_creation_is_replaced_never_appended_to(
    data_dir: Path, tmp_path: Path, debris: str
) -> None:
    """A staged manifest left by a creation that died is replaced whole; a symlink planted
    under its name is removed, never written through."""
    chain = Chain()
    sdir = data_dir / "sessions" / chain.sess
    for directory in (data_dir, sdir.parent, sdir):
        directory.mkdir(mode=0o700, exist_ok=True)
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep me\n")
    staged = sdir / "manifest.jsonl.tmp"
    if debris == "symlink":
        staged.symlink_to(outside)
    else:
        staged.write_bytes(b'{"kind":"segment_closed","truncated\n')
    append(_fresh(data_dir), chain.sess, chain.start())
    fresh = _fresh(data_dir)
    assert fresh.health(chain.sess).unwrap().kind == "healthy"
    assert len(events_of(fresh, chain.sess)) == 3
    assert not staged.is_symlink()
    assert not staged.exists()
    lines = (sdir / "manifest.jsonl").read_bytes().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["segment_closed", "snapshot_pinned"]
    assert outside.read_bytes() == b"keep me\n"
