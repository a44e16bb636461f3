"""Spare files made ahead of need: invisible until named, never following a planted link,
and the appends that use them keep their bytes and modes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from workrail.store import fsio
from workrail.store.spares import MAX_DIRECTORIES, Spares, link_spare

needs_tmpfile = pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="Linux O_TMPFILE")


@needs_tmpfile
def test_a_spare_is_an_empty_private_file_no_one_can_see(tmp_path: Path) -> None:
    spares = Spares(background=False)
    fd = spares.take(tmp_path)
    assert fd is not None
    try:
        st = os.fstat(fd)
        assert st.st_size == 0
        assert st.st_nlink == 0
        assert stat.S_IMODE(st.st_mode) & 0o077 == 0
        assert list(tmp_path.iterdir()) == []
        os.write(fd, b"payload")
        link_spare(fd, tmp_path / "named")
    finally:
        os.close(fd)
    assert (tmp_path / "named").read_bytes() == b"payload"


@needs_tmpfile
def test_the_next_spare_is_made_after_flush_not_during_the_write(tmp_path: Path) -> None:
    spares = Spares(background=False)
    first = spares.take(tmp_path)
    assert first is not None
    os.close(first)
    assert str(tmp_path) not in spares._ready  # nothing made while the caller writes
    spares.flush()
    assert str(tmp_path) in spares._ready
    ready = spares._ready[str(tmp_path)]
    again = spares.take(tmp_path)
    assert again == ready
    assert again is not None
    os.close(again)


@needs_tmpfile
def test_ready_spares_are_bounded(tmp_path: Path) -> None:
    spares = Spares(background=False)
    for i in range(MAX_DIRECTORIES + 5):
        directory = tmp_path / f"d{i}"
        directory.mkdir()
        fd = spares.take(directory)
        assert fd is not None
        os.close(fd)
        spares.flush()
    assert len(spares._ready) == MAX_DIRECTORIES


@needs_tmpfile
def test_linking_never_replaces_nor_follows_a_planted_symlink(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"precious")
    inside = tmp_path / "dir"
    inside.mkdir()
    (inside / "target").symlink_to(outside)
    fd = Spares(background=False).take(inside)
    assert fd is not None
    try:
        with pytest.raises(FileExistsError):
            link_spare(fd, inside / "target")
    finally:
        os.close(fd)
    assert outside.read_bytes() == b"precious"


def test_write_synced_replaces_a_planted_symlink_instead_of_writing_through_it(
    tmp_path: Path,
) -> None:
    """The segment's temp file: an older file at the name is replaced (as O_TRUNC did),
    but a symlink planted there is replaced itself; its target is never written."""
    outside = tmp_path / "outside"
    outside.write_bytes(b"precious")
    events = tmp_path / "events"
    events.mkdir()
    tmp = events / "00000000-00000002.jsonl.tmp"
    tmp.symlink_to(outside)
    fsio.write_synced(tmp, b"segment bytes\n")
    if hasattr(os, "O_TMPFILE"):
        assert outside.read_bytes() == b"precious"
        assert not tmp.is_symlink()
    assert tmp.read_bytes() == b"segment bytes\n"
    assert stat.S_IMODE(tmp.stat().st_mode) == 0o600


def test_write_synced_replaces_an_older_file(tmp_path: Path) -> None:
    path = tmp_path / "x.tmp"
    path.write_bytes(b"an older, longer content")
    fsio.write_synced(path, b"new")
    assert path.read_bytes() == b"new"


def test_atomic_write_and_create_exclusive_leave_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "file.json"
    fsio.atomic_write(target, b"one")
    fsio.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert fsio.create_exclusive(tmp_path / "sub" / "once", b"first")
    assert not fsio.create_exclusive(tmp_path / "sub" / "once", b"second")
    assert (tmp_path / "sub" / "once").read_bytes() == b"first"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["file.json", "once"]
    for name in ("file.json", "once"):
        assert stat.S_IMODE((tmp_path / "sub" / name).stat().st_mode) == 0o600


def test_without_spares_files_are_created_directly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("workrail.store.spares._O_TMPFILE", 0)
    assert Spares(background=False).take(tmp_path) is None
    fsio.atomic_write(tmp_path / "a", b"bytes")
    fsio.write_synced(tmp_path / "b", b"more")
    assert (tmp_path / "a").read_bytes() == b"bytes"
    assert (tmp_path / "b").read_bytes() == b"more"
