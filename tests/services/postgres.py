"""A throwaway PostgreSQL cluster from the installed server binaries.

`initdb` into a fresh temporary directory and `pg_ctl` on a free 127.0.0.1 port. Both
refuse to run as root, so as root they run as an unprivileged user (`postgres` when the
Debian package created it, else a system user made for the purpose). Host connections need
a password (scram-sha-256), so tests can also exercise wrong credentials; the server has
`fsync` off (the tests do not survive power cuts, only process deaths, for which the OS
page cache suffices) and `synchronous_commit` at its default, on. The test suite's clusters
live on a memory file system when the machine has one with room (`MEMORY_DIR`).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from tests.services import missing

SUPERUSER = "workrail"
SERVICE_USER = "workrail-pg"
MEMORY_DIR = Path("/dev/shm")
MEMORY_ROOM = 2 << 30
"""Free bytes the memory file system must have for a cluster: each database is a copy of
the 7.5 MB template, and a test worker's shared cluster gathers a hundred of them."""


def memory_dir() -> Path | None:
    """A memory file system with room for a cluster, if there is one. On it, creating a
    database (a copy of the template) takes 50 ms where a busy disk took half a second,
    and nothing of a cluster with fsync off was ever meant to reach the disk."""
    try:
        if os.access(MEMORY_DIR, os.W_OK) and shutil.disk_usage(MEMORY_DIR).free >= MEMORY_ROOM:
            return MEMORY_DIR
    except OSError:
        pass
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def server_bindir() -> Path | None:
    """The newest /usr/lib/postgresql/<v>/bin with initdb and pg_ctl, else `pg_ctl` on PATH."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if candidates:
        return Path(candidates[-1]).parent
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    return None


def require_bindir() -> Path:
    """The server binaries; skips the test, or fails it under CI, when they are missing."""
    bindir = server_bindir()
    if bindir is None:
        missing("PostgreSQL server", "initdb and pg_ctl are not installed")
    return bindir


def _service_user() -> str | None:
    """Who runs the server: None for ourselves, else an unprivileged user (made if needed)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", SERVICE_USER):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    made = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
        check=False,
        capture_output=True,
    )
    if made.returncode != 0:
        pwd.getpwnam(SERVICE_USER)  # a parallel test worker made it first; else KeyError
    return SERVICE_USER


@dataclass
class PostgresCluster:
    """One running (or stopped) cluster; `url(db)` connects as the superuser."""

    bindir: Path
    root: Path
    port: int
    password: str
    user: str | None
    databases: list[str] = field(default_factory=list)

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "server.log"

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://{SUPERUSER}:{secret}@127.0.0.1:{self.port}/{database}"

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, cwd="/")

    @classmethod
    def create(cls, bindir: Path, parent: Path | None = None) -> PostgresCluster:
        """A new cluster in a fresh directory under `parent` (default: the temporary one)."""
        user = _service_user()
        root = Path(tempfile.mkdtemp(prefix="workrail-pg-", dir=parent))
        cluster = cls(bindir, root, free_port(), secrets.token_hex(12), user)
        pwfile = root / "pwfile"
        pwfile.write_text(cluster.password + "\n")
        if user is not None:
            info = pwd.getpwnam(user)
            for path in (root, pwfile):
                os.chown(path, info.pw_uid, info.pw_gid)
        root.chmod(0o700)
        cluster._run(
            "initdb",
            "-D",
            str(cluster.data),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        return cluster

    def start(self, *, fsync: bool = False) -> None:
        """Start on our port; `fsync` on only where durability cost is measured (benchmarks)."""
        options = (
            f"-c port={self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.data} -c fsync={'on' if fsync else 'off'} "
            "-c max_connections=200"
        )
        done = self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {done.stderr}\n{self.server_log()}")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)

    def restart(self, mode: str = "immediate") -> None:
        self.stop(mode)
        self.start()

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; its name."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.databases.append(name)
        return name

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


def start_cluster(*, fsync: bool = False, in_memory: bool = False) -> PostgresCluster:
    """A started cluster; `in_memory`: on the memory file system when there is one (never
    with `fsync`, which is on only to measure what durability costs)."""
    parent = memory_dir() if in_memory and not fsync else None
    cluster = PostgresCluster.create(require_bindir(), parent)
    try:
        cluster.start(fsync=fsync)
    except BaseException:
        cluster.destroy()
        raise
    return cluster
