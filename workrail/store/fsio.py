"""Small durable-file helpers: atomic publication (unique temp file + fsync + rename +
directory fsync), directory creation that is itself durable, synced writes, and reads
that never follow a link or block on a FIFO.

Inside the data directory nothing is followed: every directory below the root is checked
with `lstat` (and created 0700 when missing, whatever the umask), every file is opened
with `O_NOFOLLOW` and must be a regular file (`S_ISREG`) once open. A planted symlink,
FIFO, socket, device or directory where a file belongs is an `UnsafePath` error, never a
write to somewhere else and never a hang. The root itself may be a symlink: that is the
operator's choice of where the data lives.

Every regular file the store creates has mode 0600, as the reference does.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
import tempfile
from pathlib import Path

from workrail.store.spares import Spares, link_spare

FILE_MODE = 0o600
DIR_MODE = 0o700

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOT_OWNER_ONLY = 0o077

log = logging.getLogger("workrail.store")


class UnsafePath(OSError):
    """A path inside the data directory that is not the plain file or directory it must
    be (a symlink, FIFO, socket, device, or the wrong kind). Never followed, never read."""

    def __init__(self, path: Path | str, what: str) -> None:
        super().__init__(errno.EINVAL, f"{path} is {what}, not a plain file or directory")
        self.path = str(path)
        self.what = what

    def __str__(self) -> str:
        return str(self.strerror)


class NotPrivate(OSError):
    """A secret (a signing key) that someone other than this user owns or can read or
    write, or that sits in a directory others can write: whoever can change it can forge
    tokens, so it is refused unless the operator allowed it explicitly."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EPERM, message)

    def __str__(self) -> str:
        return str(self.strerror)


def kind_of(mode: int) -> str:
    """What a file-type mode is, for people."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a special file"


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dir(directory: Path) -> bool:
    """Create one directory 0700 (exactly, whatever the umask); False if it appeared first."""
    try:
        os.mkdir(directory, DIR_MODE)
    except FileExistsError:
        return False
    os.chmod(directory, DIR_MODE)
    fsync_dir(directory.parent)
    return True


def ensure_dir(path: Path) -> None:
    """`mkdir -p` whose new entries survive a power loss: each directory created here is
    0700 and made durable by fsyncing its parent. Existing ancestors may be symlinks;
    use `ensure_tree` for paths inside the data directory."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        _make_dir(directory)


def ensure_tree(root: Path, path: Path, *, create: bool = True) -> bool:
    """Check (and with `create`, make) every directory from `root` down to `path`.

    `root` may be a symlink and is created like `ensure_dir`; each component below it must
    be a real directory (checked with `lstat`), else `UnsafePath`. Returns whether `path`
    exists afterwards (always True with `create`). On the append path, so plain strings."""
    top, below = os.fspath(root), os.fspath(path)
    if below != top and not below.startswith(top.rstrip(os.sep) + os.sep):
        raise ValueError(f"{below} is not inside {top}")
    if create and not os.path.isdir(top):
        ensure_dir(root)
    current = top.rstrip(os.sep)
    for part in below[len(top) :].split(os.sep):
        if not part:
            continue
        current = f"{current}{os.sep}{part}"
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            if not create:
                return False
            if _make_dir(Path(current)):
                continue
            mode = os.lstat(current).st_mode
        if not stat.S_ISDIR(mode):
            raise UnsafePath(current, kind_of(mode))
    return True


def open_regular(path: Path, flags: int = os.O_RDONLY, mode: int = FILE_MODE) -> int:
    """`os.open` that refuses anything but a regular file: a symlink is not followed, and a
    FIFO is never waited on (opened non-blocking, then refused by its type)."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            try:
                st = os.lstat(path)
            except OSError:
                raise exc from None
            raise UnsafePath(path, kind_of(st.st_mode)) from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(path, kind_of(st.st_mode))
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path) -> bytes:
    """All bytes of a regular file (see `open_regular`)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _privacy_problem(st: os.stat_result, *, directory: bool) -> str | None:
    euid = os.geteuid()
    if st.st_uid != euid:
        return f"is owned by uid {st.st_uid}, not by this user (uid {euid})"
    if directory and st.st_mode & 0o022:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    if not directory and st.st_mode & _NOT_OWNER_ONLY:
        return f"is accessible by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def read_private(path: Path, *, allow_shared: bool = False) -> bytes:
    """A secret's bytes: a regular file owned by this user with no access for group or
    others, in a directory owned by this user that no one else can write. Otherwise
    `NotPrivate` (or, with `allow_shared`, a logged warning). Raises FileNotFoundError
    when absent and `UnsafePath` for a link or non-regular file."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        problems = []
        own = _privacy_problem(os.fstat(f.fileno()), directory=False)
        if own is not None:
            problems.append(f"{path} {own}")
        parent = _privacy_problem(os.lstat(path.parent), directory=True)
        if parent is not None:
            problems.append(f"its directory {path.parent} {parent}")
        if problems:
            message = "; ".join(problems)
            if not allow_shared:
                raise NotPrivate(message)
            log.warning("using %s although %s (allowed by configuration)", path, message)
        return f.read()


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a short write is legal for regular files)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_synced(path: Path, data: bytes) -> os.stat_result:
    """Create `path` afresh (0600) holding `data`, fsync'd, then close; on failure nothing
    is left at `path`. Written into a spare file made ahead of need and linked under
    `path` once durable; without a spare, `path` is created with O_EXCL. Either way
    whatever was at `path` is unlinked first, so a symlink planted there is removed, never
    written through. Returns the stat of the file written (its descriptor's, not the
    name's)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    written = _write_spare(path, data, replace=False)
    if written is not None:
        return written
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    try:
        write_all(fd, data)
        os.fsync(fd)
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        os.unlink(path)  # ours (O_EXCL): a half-written file helps nobody, on a full disk least
        raise
    os.close(fd)
    return st


def _write_spare(path: Path, data: bytes, *, replace: bool) -> os.stat_result | None:
    """Write `data` into a spare of `path`'s directory, fsync it, and link it as `path`:
    the stat of the file written, or None (nothing named) when no spare can be had or
    linked here."""
    fd = Spares.shared().take(path.parent)
    if fd is None:
        return None
    try:
        write_all(fd, data)
        os.fsync(fd)
        try:
            link_spare(fd, path)
        except FileExistsError:
            if not replace:
                raise
            os.unlink(path)  # an older file goes (never written through a symlink)
            link_spare(fd, path)
        return os.fstat(fd)
    finally:
        os.close(fd)


def _synced_temp(path: Path, data: bytes) -> Path:
    """A fully written, fsync'd temp file beside `path` with a name no other writer uses,
    so concurrent writers of the same path never truncate each other's bytes: a spare
    made ahead of need linked under a fresh name (a link never follows nor replaces), else
    mkstemp (O_EXCL, does not follow links)."""
    name = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    if _write_spare(name, data, replace=False) is not None:
        return name
    fd, made = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    name = Path(made)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(name)
        raise
    os.close(fd)
    return name


def atomic_write(path: Path, data: bytes, *, root: Path | None = None) -> None:
    """Publish `data` at `path` atomically and durably (last writer wins). With `root`,
    the directories from `root` down are checked as by `ensure_tree`."""
    if root is None:
        ensure_dir(path.parent)
    else:
        ensure_tree(root, path.parent)
    tmp = _synced_temp(path, data)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def create_exclusive(path: Path, data: bytes, *, root: Path | None = None) -> bool:
    """Publish `data` at `path` only if nothing is there yet (first writer wins), durably.

    Returns False, writing nothing, when `path` already exists (a dangling symlink
    included: link(2) does not follow it).
    """
    if root is None:
        ensure_dir(path.parent)
    else:
        ensure_tree(root, path.parent)
    tmp = _synced_temp(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    fsync_dir(path.parent)
    return True
