from __future__ import annotations

import errno
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import SKIP_PREFIX, missing
from tests.services.postgres import PostgresCluster, start_cluster

# A copy of the data written by the reference implementation (spec fixtures).
REFERENCE = Path(__file__).resolve().parent / "fixtures" / "reference"


@pytest.fixture
def anyio_backend() -> str:
    """The async tests (the MCP SDK's client and servers) run on asyncio."""
    return "asyncio"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def reference_data(tmp_path: Path) -> Path:
    """A writable copy of the reference data directory."""
    target = tmp_path / "refdata"
    shutil.copytree(REFERENCE / "data", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(0o700 if p.is_dir() else 0o600)
    return target


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL for the whole run (tests keep apart by database or id)."""
    cluster = start_cluster(in_memory=True)
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """The URL of a new, empty database on the shared cluster."""
    return postgres_cluster.url(postgres_cluster.create_database())


@pytest.fixture
def own_postgres() -> Iterator[PostgresCluster]:
    """A cluster of the test's own, for tests that stop or restart the server."""
    cluster = start_cluster(in_memory=True)
    try:
        yield cluster
    finally:
        cluster.destroy()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per missing service with the number of tests that did not run for it, so a
    green run with skipped tests is never mistaken for a full one."""
    counts: Counter[str] = Counter()
    why: dict[str, str] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) else ""
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(SKIP_PREFIX):
            service, _, detail = reason.removeprefix(SKIP_PREFIX).partition(": ")
            counts[service] += 1
            why.setdefault(service, detail)
    if not counts:
        return
    terminalreporter.section("services not installed", sep="-", yellow=True)
    for service, count in sorted(counts.items()):
        tests = "test" if count == 1 else "tests"
        terminalreporter.line(
            f"{service}: {count} {tests} did not run — {why[service]}; under CI=true they "
            "fail instead"
        )


class SmallDisk:
    """A tiny real file system (tmpfs) that tests fill to ENOSPC and free again."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._ballast = root / "ballast"

    def fill(self) -> None:
        """Write until the file system refuses a single further byte."""
        with open(self._ballast, "ab", buffering=0) as f:
            for size in (1 << 20, 1 << 12, 1):
                while True:
                    try:
                        f.write(b"\0" * size)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        break

    def free(self) -> None:
        self._ballast.unlink(missing_ok=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 4 MiB tmpfs mounted under tmp_path (mounting needs root, which the suite has).
    Where mounting is impossible the test is skipped, and fails under CI."""
    mountpoint = tmp_path / "small-disk"
    mountpoint.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mountpoint)],
            check=True,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        missing("a mountable tmpfs", f"mount failed ({exc})", "run the tests as root")
    try:
        yield SmallDisk(mountpoint)
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, timeout=30)
