"""The MCP catalogue as the SDK last answered it, kept on disk for the next start-up.

Every client asks for `tools/list` (and most for `prompts/list`) right after
`initialize`, and an agent's first call is most often `list_workflows`; answering them from
the SDK means waiting for the SDK and the engine to load. So once a server has been built,
the SDK's own answers to those requests, for every protocol revision, are written to
`<data dir>/cache/mcp-catalog.json`
(workrail.mcp.catalog_gen), and the next start-up answers them from that file before the
SDK has loaded (workrail.mcp.stdio_serve).

The file holds one catalogue and the key it was made under: a digest of everything the
answers are made of that can be observed without loading anything — this package's files
and the SDK's (names, sizes, modification times), the settings, the workflow and routine files and the fence key (whose state decides whether
`effect_checkpoint` is served). A `list_workflows` answer is made of the workflow files and
the code alone, so it is kept too; no other call is (each reads or writes the store). Any change to
any of these, a new release or an edited schema included, changes the key, and a
catalogue made under another key is never used: the SDK answers, and the catalogue is made
again. Nothing is written by hand, so nothing can drift from the SDK.

The 2026-era revisions have no `initialize`: every request carries its envelope (the
protocol version, the client's capabilities and identity) in `_meta`, and every result the
server's identity. For them the catalogue holds `server/discover` too, asked
with a plain envelope; a request with another plain envelope gets the same answer
(tests/mcp/test_catalog.py compares).

What is not here: `resources/list` (it lists sessions, read from the store on every
request: the start-up runs WorkRail's own listing for it, workrail.mcp.resource_listing),
and, left to the SDK, any request with other parameters (a cursor, another `_meta`) and
everything else.

Standard library only: this is read before anything else loads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from workrail import __version__

if TYPE_CHECKING:
    from workrail.config import WorkrailConfig

CATALOG_FORMAT: Final = 3
CACHE_DIR: Final = "cache"
CATALOG_FILE: Final = "mcp-catalog.json"
CATALOG_METHODS: Final = ("tools/list", "prompts/list")
"""The requests answered from the catalogue (prompts/list only when there is a runnable
workflow: then the SDK serves prompts whatever the store holds)."""
MODERN_CATALOG_METHODS: Final = ("server/discover",)
"""At a 2026-era revision (no `initialize`: a client opens with `server/discover`), this
too."""
CATALOG_CALLS: Final = ("list_workflows",)
"""The tools whose call without arguments is answered from the catalogue: their answer
depends only on what the key covers."""
SDK_PACKAGES: Final = ("mcp", "mcp_types", "pydantic", "pydantic_core")
KEYS_DIR: Final = "keys"
_PACKAGE_DIR: Final = Path(__file__).resolve().parents[1]
_MAX_CATALOG_BYTES: Final = 8 * 2**20


@dataclass(frozen=True)
class Catalogue:
    """The SDK's answers, by protocol revision and method: each the `result` member's
    JSON text, exactly as the SDK wrote it."""

    key: str
    runnable: bool
    """A workflow that can be started: then `initialize` offers prompts and resources."""
    results: dict[str, dict[str, bytes]]
    calls: dict[str, dict[str, bytes]]
    """By protocol revision and tool name: the `result` of a call without arguments."""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": CATALOG_FORMAT,
            "key": self.key,
            "runnable": self.runnable,
            "results": _texts(self.results),
            "calls": _texts(self.calls),
        }


def _texts(answers: dict[str, dict[str, bytes]]) -> dict[str, dict[str, str]]:
    return {
        revision: {name: text.decode("utf-8") for name, text in by_name.items()}
        for revision, by_name in answers.items()
    }


def catalog_path(config: WorkrailConfig) -> Path:
    return config.data_dir / CACHE_DIR / CATALOG_FILE


def situation_key(config: WorkrailConfig, package_dir: Path = _PACKAGE_DIR) -> str:
    """The digest of what the catalogue's answers are made of (see the module);
    `package_dir` is this package's directory (tests give a copy)."""
    digest = hashlib.sha256()

    def feed(*parts: object) -> None:
        digest.update(repr(parts).encode("utf-8", errors="surrogateescape"))
        digest.update(b"\n")

    feed("format", CATALOG_FORMAT, __version__)
    _feed_tree(feed, package_dir)
    for name in SDK_PACKAGES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        feed("sdk", name, origin, _stat(Path(origin)) if origin else None)
        if origin:
            feed("sdk-dir", _stat(Path(origin).parent))
    feed(
        "settings",
        str(config.data_dir),
        config.store_url,
        config.fence.url,
        config.allow_insecure_keys,
    )
    # The keys (the fence key's state decides whether effect_checkpoint is served),
    # looked at without loading the fence.
    _feed_dir(feed, config.data_dir / KEYS_DIR)
    for source in config.discovery.sources():
        feed("workflows", source.origin, str(source.directory), source.order)
        _feed_dir(feed, source.directory)
    return digest.hexdigest()


def _stat(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns, st.st_ino)


def _feed_dir(feed: Any, directory: Path, *, depth: int = 1) -> None:
    """A workflow directory as discovery reads it: its entries, each with its stat, and
    the entries of its subdirectories (`routines/`: a routine edited in place changes no
    directory's stat, yet changes the workflows that include it)."""
    feed("dir", _stat(directory))
    try:
        with os.scandir(directory) as entries:
            found = sorted((entry.name, entry.is_dir()) for entry in entries)
    except OSError:
        return
    for name, is_dir in found:
        feed(name, _stat(directory / name))
        if is_dir and depth > 0:
            _feed_dir(feed, directory / name, depth=depth - 1)


def _feed_tree(feed: Any, root: Path) -> None:
    """This package's files (the code that makes the answers), skipping bytecode."""
    stack = [str(root)]
    found: list[tuple[str, int, int, int]] = []
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(entry.path)
                elif not entry.name.endswith((".pyc", ".pyo")):
                    st = entry.stat()
                    found.append((entry.path, st.st_size, st.st_mtime_ns, st.st_ino))
    found.sort()
    prefix = len(str(root))
    feed("tree", [(path[prefix:], *rest) for path, *rest in found])


def load_catalogue(config: WorkrailConfig, key: str) -> Catalogue | None:
    """The catalogue on disk when it was made under `key`; None otherwise (missing,
    unreadable, malformed, or made under another key)."""
    path = catalog_path(config)
    try:
        if not _private_dir(path.parent):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as file:
            st = os.fstat(file.fileno())
            if not stat.S_ISREG(st.st_mode) or not _private(st):
                return None  # what another user could have written is not answered from
            raw = file.read(_MAX_CATALOG_BYTES + 1)
        if len(raw) > _MAX_CATALOG_BYTES:
            return None
        data = json.loads(raw)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != CATALOG_FORMAT:
        return None
    if data.get("key") != key or not isinstance(data.get("runnable"), bool):
        return None
    results = _parsed(data.get("results"), (*MODERN_CATALOG_METHODS, *CATALOG_METHODS))
    calls = _parsed(data.get("calls"), CATALOG_CALLS)
    if results is None or calls is None:
        return None
    return Catalogue(key, data["runnable"], results, calls)


def _parsed(answers: Any, names: tuple[str, ...]) -> dict[str, dict[str, bytes]] | None:
    """Answers by revision and name, each a text; None when any is not."""
    if not isinstance(answers, dict):
        return None
    parsed: dict[str, dict[str, bytes]] = {}
    for revision, by_name in answers.items():
        if not isinstance(by_name, dict):
            return None
        parsed[revision] = {}
        for name, text in by_name.items():
            if name not in names or not isinstance(text, str):
                return None
            parsed[revision][name] = text.encode("utf-8")
    return parsed


def _private(st: os.stat_result) -> bool:
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _private_dir(path: Path) -> bool:
    """A real directory (not a symlink: nothing inside the data directory is followed),
    this user's, writable by no one else."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and _private(st)


def save_catalogue(config: WorkrailConfig, catalogue: Catalogue) -> None:
    """Written whole or not at all (a temporary file renamed over the old one), private to
    this user like the rest of the data directory."""
    path = catalog_path(config)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not _private_dir(path.parent):
        raise OSError(f"{path.parent} is not a private directory of this user")
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    data = json.dumps(catalogue.to_json(), ensure_ascii=False, separators=(",", ":"))
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data.encode("utf-8"))
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
