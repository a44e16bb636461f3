"""A real console server (uvicorn on a loopback port, in a thread of the test process) over
a real data directory, a real HTTP client, and Debian's Chromium driven by Playwright."""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import psycopg
import pytest
import uvicorn
from returns.result import Success

from tests.conftest import REFERENCE
from tests.console.scenarios import damage_tail
from tests.engine.conftest import engine_over
from tests.services import missing
from tests.store.postgres.conftest import flip_a_byte_of_the_latest_event
from workrail.app import build_console, open_backend, open_backend_at
from workrail.cli.console import server_config
from workrail.config import Overrides, WorkrailConfig, load_config
from workrail.console.security import Guard, cookie_name
from workrail.console.web import stop_live_streams
from workrail.engine.api import Engine
from workrail.store.ports import Backend

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"


def console_config(
    data_dir: Path, workflows: Path | None = None, store_url: str | None = None
) -> WorkrailConfig:
    home = data_dir.parent / "home"
    project = data_dir.parent / "project"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    loaded = load_config(
        {},
        Overrides(
            data_dir=str(data_dir),
            store_url=store_url,
            workflow_dirs=(str(workflows or REFERENCE / "workflows"),),
        ),
        home=home,
        cwd=project,
    )
    assert isinstance(loaded, Success)
    config: WorkrailConfig = loaded.unwrap()
    return config


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: str
    cookies: list[str] = field(default_factory=list)


@dataclass
class RunningConsole:
    base_url: str
    guard: Guard
    backend: Backend
    data_dir: Path
    server: uvicorn.Server
    thread: threading.Thread
    app: Any

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).netloc

    @property
    def cookie(self) -> str:
        """The Cookie header a browser that opened the secret URL sends."""
        return f"{self.cookie_name}={self.guard.secret}"

    @property
    def cookie_name(self) -> str:
        return cookie_name({"server": ("127.0.0.1", int(self.host.rsplit(":", 1)[1]))})

    @property
    def secret_url(self) -> str:
        return f"{self.base_url}/?secret={self.guard.secret}"

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """A raw HTTP request, with whatever Host, Origin or Cookie the test says."""
        parts = urlsplit(self.base_url)
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
        try:
            sent = {"Host": self.host, **(headers or {})}
            conn.request(method, path, body=body, headers=sent)
            resp = conn.getresponse()
            data = resp.read().decode("utf-8", "replace")
            return Reply(
                resp.status,
                {k.lower(): v for k, v in resp.getheaders()},
                data,
                resp.headers.get_all("set-cookie") or [],
            )
        finally:
            conn.close()

    def get(self, path: str, **headers: str) -> Reply:
        return self.request("GET", path, headers=headers)

    def stop(self) -> None:
        stop_live_streams(self.app)
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_console(
    data_dir: Path, workflows: Path | None = None, store_url: str | None = None
) -> RunningConsole:
    config = console_config(data_dir, workflows, store_url)
    backend = open_backend(config).unwrap()
    guard = Guard.for_bind("127.0.0.1")
    app = build_console(config, backend, guard, "test").unwrap()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(server_config(app, config.http))  # what `workrail console` serves with
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    running = RunningConsole(
        f"http://127.0.0.1:{port}", guard, backend, data_dir, server, thread, app
    )
    deadline = time.monotonic() + 30  # generous: two busy cores under CI
    while not server.started and time.monotonic() < deadline:
        threading.Event().wait(0.025)
    assert server.started, "the console server did not start"
    return running


@dataclass
class Store:
    """The store a test's console reads: the files backend or a fresh PostgreSQL database,
    with what the tests do to it from outside (write through an engine, damage it, take a
    digest of everything stored)."""

    kind: str
    data_dir: Path
    url: str | None = None
    opened: list[Backend] = field(default_factory=list)

    def open(self) -> Backend:
        backend = open_backend_at(self.url or self.data_dir).unwrap()
        self.opened.append(backend)
        return backend

    def engine(self, workflows: Path | None = None) -> Engine:
        return engine_over(self.open(), workflows)

    def damage_tail(self, session_id: str) -> None:
        """Corrupt the bytes of the session's latest append: it becomes corrupt_tail."""
        if self.url is None:
            damage_tail(self.data_dir, session_id)
            return
        flip_a_byte_of_the_latest_event(self.url, session_id)

    def noticed(self) -> None:
        """Let the query index see a change made behind the store's back. The files index
        re-checks each session's files on every query by itself; PostgreSQL's summary rows
        change only with appends, so damage done by SQL needs a reindex (`workrail
        sessions reindex`) before the list shows it (the session's own page reads the log
        and shows it at once)."""
        if self.url is not None:
            self.open().query.rebuild().unwrap()

    def damage_head(self, session_id: str) -> None:
        """Corrupt the session's first append, so nothing of it can be read."""
        if self.url is None:
            manifest = self.data_dir / "sessions" / session_id / "manifest.jsonl"
            lines = manifest.read_bytes().splitlines(keepends=True)
            manifest.write_bytes(b"{not json\n" + b"".join(lines[1:]))
            return
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(
                "UPDATE workrail_events SET body = set_byte(body, 3, get_byte(body, 3) # 1) "
                "WHERE session_id = %s AND event_index = 0",
                (session_id,),
            )

    def digest(self) -> str:
        """Everything stored: the data directory's files, and for PostgreSQL every row of
        every table too (so "reading never writes" covers both). The files backend's
        summary index (`index/`) is left out: a disposable cache of the logs that a listing
        brings up to date, as PostgreSQL's summary rows are kept up to date by each append."""
        h = hashlib.sha256()
        for path in sorted(p for p in self.data_dir.rglob("*") if p.is_file()):
            relative = path.relative_to(self.data_dir)
            if relative.parts[0] == "index" or path.name == ".lock":
                continue
            h.update(str(relative).encode())
            h.update(path.read_bytes())
        if self.url is not None:
            with psycopg.connect(self.url) as conn:
                tables = [
                    r[0]
                    for r in conn.execute(
                        "SELECT table_name FROM information_schema.tables "
                        "WHERE table_schema = 'public' ORDER BY table_name"
                    )
                ]
                for table in tables:
                    rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
                    h.update(table.encode())
                    h.update(repr(sorted(repr(r) for r in rows)).encode())
        return h.hexdigest()

    def close(self) -> None:
        for backend in self.opened:
            backend.close()


def store_for(request: pytest.FixtureRequest, data_dir: Path, prefix: str) -> Iterator[Store]:
    """The backend `request.param` names ("files", or "postgres": a new database on the
    shared cluster, named with `prefix`), closed when the test is done."""
    if request.param == "files":
        chosen = Store("files", data_dir)
    else:
        cluster = request.getfixturevalue("postgres_cluster")
        chosen = Store("postgres", data_dir, cluster.url(cluster.create_database(prefix)))
    yield chosen
    chosen.close()


@pytest.fixture(params=["files", "postgres"])
def store(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[Store]:
    """Every console test runs on both backends."""
    yield from store_for(request, data_dir, "console")


@pytest.fixture
def engine(store: Store) -> Engine:
    return store.engine()


@pytest.fixture
def console(store: Store) -> Iterator[RunningConsole]:
    running = start_console(store.data_dir, store_url=store.url)
    yield running
    running.stop()
    running.backend.close()


# --- the browser ---------------------------------------------------------------------------


def _browser_unavailable(reason: str) -> NoReturn:
    missing("Chromium", f"{CHROMIUM}: {reason}")


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for the console's tests, closed when they are done: Playwright's sync
    API keeps an event loop running in this thread while it is open, which other test
    packages (anyio, the MCP client) must not find."""
    if not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None:
        _browser_unavailable("not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # pragma: no cover - dev extra missing
        _browser_unavailable(f"playwright is not installed ({exc})")
    with sync_playwright() as pw:
        try:
            launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except Exception as exc:
            _browser_unavailable(f"it did not start ({exc})")
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 950}, accept_downloads=True)
    context.set_default_timeout(20_000)  # two busy cores under CI
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.errors = errors
    yield tab
    context.close()


def screenshot(tab: Any, name: str) -> Path:
    """Save a full-page screenshot as a test artifact (test-artifacts/ is not committed),
    named for the backend the test ran on."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    backend = re.search(r"\[(files|postgres)\]", os.environ.get("PYTEST_CURRENT_TEST", ""))
    path = ARTIFACTS / (f"{name}-{backend[1]}.png" if backend else f"{name}.png")
    tab.screenshot(path=str(path), full_page=True)
    return path
