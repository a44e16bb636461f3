"""Content-addressed stores: execution snapshots (`snapshots/`) and pinned compiled
workflows (`workflows/pinned/`). Files are JCS bytes named by their own sha256, written once
and atomically, and verified against their name on every first read. Nothing is followed: a link or a
non-regular file under a content name is refused on read and replaced on write."""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from returns.result import Failure, Result, Success

from workrail.core.canonical import (
    digest_file_name,
    is_digest,
)
from workrail.core.snapshot_state import SnapshotState, snapshot_state
from workrail.store.content_cache import CACHE_BYTES, ContentCache, encode
from workrail.store.errors import StoreError, StoreErrorCode, io_error
from workrail.store.fsio import UnsafePath, atomic_write, read_regular
from workrail.store.local.layout import Layout, UnsafeReference
from workrail.store.local.snapshot_states import SnapshotStateIndex
from workrail.store.ports import LIST_PAGE_MAX, StoredRef
from workrail.store.state_memo import StateMemo


class _ContentStore:
    """Shared write-once/verify-on-read logic; subclasses say where files go.

    Recently stored or read objects are kept decoded (`ContentCache`, bounded by bytes).
    """

    _error_code: StoreErrorCode = "SNAPSHOT_STORE_CORRUPTION"

    def __init__(self, layout: Layout, cache_bytes: int = CACHE_BYTES) -> None:
        self._layout = layout
        self._cache = ContentCache(cache_bytes)

    def _path(self, ref: str) -> Path:
        raise NotImplementedError

    def _directory(self) -> Path:
        raise NotImplementedError

    def put(self, value: dict[str, Any]) -> Result[str, StoreError]:
        """Store `value` under sha256(JCS(value)) and return that ref. Idempotent.

        Content already there has its mtime refreshed (also when this process remembers
        it): the collector spares recently stored entries, so a ref about to be pinned by
        an append in flight is never swept from under it."""
        encoded = encode(value, self._error_code)
        if isinstance(encoded, Failure):
            return Failure(encoded.failure())
        ref, data = encoded.unwrap()
        path = self._path(ref)
        if ref in self._cache:
            try:
                os.utime(path, follow_symlinks=False)
                return Success(ref)
            except FileNotFoundError:
                self._cache.forget(ref)
            except OSError as exc:
                return Failure(
                    io_error(exc, "SESSION_STORE_IO_ERROR", f"cannot refresh {path.name}")
                )
        try:
            try:
                if read_regular(path) == data:
                    os.utime(path, follow_symlinks=False)
                    self._cache.put(ref, value, len(data))
                    return Success(ref)
            except (FileNotFoundError, UnsafePath):
                pass  # absent, or not a plain file: published afresh (rename replaces a link)
            atomic_write(path, data, root=self._layout.root)
        except OSError as exc:
            return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", f"cannot write {path.name}"))
        self._cache.put(ref, value, len(data))
        return Success(ref)

    def get(self, ref: str) -> Result[dict[str, Any] | None, StoreError]:
        """The stored object, None when absent, or an error when the file is not what its
        name promises (bad JSON, not an object, or bytes that hash to another ref)."""
        cached = self._cache.get(ref)
        if cached is not None:
            return Success(cached)
        try:
            path = self._path(ref)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        try:
            data = read_regular(path)
        except FileNotFoundError:
            if not _link_back(_aside(path), path):
                return Success(None)
            return self.get(ref)  # a collector stopped between its rename and its check
        except UnsafePath as exc:
            return Failure(StoreError(self._error_code, f"{path.name}: {exc.what}, not a file"))
        except OSError as exc:
            return Failure(io_error(exc, self._error_code, f"cannot read {path.name}"))
        return self._cache.verified(ref, data, self._error_code, path.name)

    def list_refs(
        self, *, after: str | None = None, limit: int = LIST_PAGE_MAX
    ) -> Result[list[StoredRef], StoreError]:
        """Files whose name is a digest's, in ref order; others (temp files) are skipped."""
        try:
            names = os.listdir(self._directory())
        except FileNotFoundError:
            return Success([])
        except OSError as exc:
            return Failure(StoreError("SESSION_STORE_IO_ERROR", f"cannot list: {exc}"))
        refs = []
        for name in names:
            if not (name.startswith("sha256_") and name.endswith(".json")):
                continue
            ref = "sha256:" + name[len("sha256_") : -len(".json")]
            if is_digest(ref) and digest_file_name(ref) == name and (after is None or ref > after):
                refs.append(ref)
        refs.sort()
        page: list[StoredRef] = []
        for ref in refs:
            if len(page) >= max(0, min(limit, LIST_PAGE_MAX)):
                break
            try:
                st = os.lstat(self._path(ref))
            except FileNotFoundError:
                continue
            except OSError as exc:
                return Failure(StoreError("SESSION_STORE_IO_ERROR", f"cannot stat: {exc}"))
            page.append(StoredRef(ref, datetime.fromtimestamp(st.st_mtime, UTC)))
        return Success(page)

    def delete(self, ref: str, *, stored_before: datetime) -> Result[bool, StoreError]:
        """Rename the file aside, then judge the renamed file's mtime: a `put` that
        refreshed it before the rename shows there (the file is linked back, never over a
        newer one), and a `put` after the rename meets no file and writes it again."""
        try:
            path = self._path(ref)
        except UnsafeReference as exc:
            return Failure(StoreError("INVALID_REFERENCE", str(exc)))
        self._cache.forget(ref)
        aside = _aside(path)
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return Success(False)
        except OSError as exc:
            return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", f"cannot delete {path.name}"))
        try:
            stored_at = datetime.fromtimestamp(os.lstat(aside).st_mtime, UTC)
            if stored_at >= stored_before:  # stored again meanwhile: keep it
                _link_back(aside, path)
                os.unlink(aside)
                return Success(False)
            os.unlink(aside)
        except OSError as exc:
            return Failure(io_error(exc, "SESSION_STORE_IO_ERROR", f"cannot delete {path.name}"))
        return Success(True)


def _aside(path: Path) -> Path:
    """Where the collector moves a file while it decides (never a content name)."""
    return path.with_name(f".{path.name}.gc")


def _link_back(aside: Path, path: Path) -> bool:
    """Give `aside` its content name again, unless something is there already (a put
    wrote it afresh: that file is as good). False when there is nothing aside."""
    try:
        os.link(aside, path, follow_symlinks=False)
    except FileExistsError:
        return True
    except FileNotFoundError:
        return False
    return True


class LocalSnapshotStore(_ContentStore):
    """Execution-snapshot CAS. Each snapshot's state is also recorded, when it is stored,
    in the disposable state index (`index/snapshot-states.sqlite3`), so a run's DAG is
    drawn without reading its snapshots again."""

    _error_code = "SNAPSHOT_STORE_CORRUPTION"

    def __init__(self, layout: Layout, cache_bytes: int = CACHE_BYTES) -> None:
        super().__init__(layout, cache_bytes)
        self._states = StateMemo()
        self._index = SnapshotStateIndex(layout.root)
        self._snapshot_dir = str(layout.root / "snapshots")

    def put(self, value: dict[str, Any]) -> Result[str, StoreError]:
        stored = super().put(value)
        if isinstance(stored, Success) and stored.unwrap() not in self._states:
            state = {stored.unwrap(): snapshot_state(value)}
            self._index.record(state)
            self._states.learn(state)
        return stored

    def states(self, refs: Collection[str]) -> Result[dict[str, SnapshotState], StoreError]:
        """From memory, else from the state index, else (recording them) from the
        snapshots themselves; refs that are not stored, or not readable, are left out.

        A state once known is a fact of the ref, but whether the snapshot is still there
        is not (another process's collector, a version that keeps no index, or a person
        may have removed it): each known one is answered only while its file is there."""
        wanted = [ref for ref in dict.fromkeys(refs) if is_digest(ref)]
        found = self._states.known(wanted)
        unknown = [ref for ref in wanted if ref not in found]
        if unknown:
            recorded = self._index.lookup(unknown)
            self._states.learn(recorded)
            found.update(recorded)
            unknown = [ref for ref in unknown if ref not in recorded]
        found = {ref: state for ref, state in found.items() if self._present(ref)}
        learned: dict[str, SnapshotState] = {}
        for ref in unknown:
            got = self.get(ref)
            if isinstance(got, Success) and got.unwrap() is not None:
                learned[ref] = snapshot_state(got.unwrap())
        if learned:
            self._index.record(learned)
            self._states.learn(learned)
            found.update(learned)
        return Success(found)

    def _present(self, ref: str) -> bool:
        """A regular file under the ref's name (what `get` would read, not verified).
        A plain string path: a 2,000-node run asks this 2,000 times."""
        try:
            return stat.S_ISREG(os.lstat(f"{self._snapshot_dir}/{digest_file_name(ref)}").st_mode)
        except OSError:
            return False

    def delete(self, ref: str, *, stored_before: datetime) -> Result[bool, StoreError]:
        deleted = super().delete(ref, stored_before=stored_before)
        if isinstance(deleted, Success):
            self._states.forget(ref)
            self._index.forget(ref)
        return deleted

    def close(self) -> None:
        self._index.close()

    def _path(self, ref: str) -> Path:
        return self._layout.snapshot_path(ref)

    def _directory(self) -> Path:
        return self._layout.root / "snapshots"


class LocalPinnedWorkflowStore(_ContentStore):
    """Compiled workflows by workflowHash."""

    _error_code = "PINNED_WORKFLOW_IO_ERROR"

    def _path(self, ref: str) -> Path:
        return self._layout.pinned_path(ref)

    def _directory(self) -> Path:
        return self._layout.root / "workflows" / "pinned"
