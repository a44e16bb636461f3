"""The one configuration object: built once at the edge from the environment and the
command line, then passed down explicitly. Nothing reads configuration from, or writes it
to, `os.environ` anywhere else.

Parsing is pure (the environment is an argument), and every bad setting is a
`ConfigError` that names the setting and what to put there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from returns.result import Failure, Result, Success

from workrail.core.urls import redact_url
from workrail.fence.ratelimit import RateLimits
from workrail.workflow.sources import DiscoveryConfig, bundled_workflows_dir

DATA_DIR_ENV: Final = "WORKRAIL_DATA_DIR"
STORE_URL_ENV: Final = "WORKRAIL_STORE_URL"
LOG_LEVEL_ENV: Final = "WORKRAIL_LOG_LEVEL"
FENCE_URL_ENV: Final = "WORKRAIL_FENCE_URL"
INSECURE_KEYS_ENV: Final = "WORKRAIL_ALLOW_INSECURE_KEYS"
HEAD_TIMEOUT_ENV: Final = "WORKRAIL_HTTP_HEAD_TIMEOUT_S"
MAX_SESSIONS_ENV: Final = "WORKRAIL_HTTP_MAX_SESSIONS"
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LOG_LEVEL: Final = "WARNING"
POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")
MEMORY_URL: Final = "memory://"
"""The in-memory store, for tests and demos: sessions live in the process and are lost
when it exits."""


@dataclass(frozen=True)
class ConfigError:
    """A setting that cannot be used: which one, and what is wrong with it."""

    setting: str
    message: str

    def __str__(self) -> str:
        return f"{self.setting}: {self.message}"


@dataclass(frozen=True)
class LogSettings:
    level: str = DEFAULT_LOG_LEVEL
    file: Path | None = None


@dataclass(frozen=True)
class FenceSettings:
    """The effect-checkpoint backend. `url` None follows the session store (SQLite in the
    data directory on files, the store's database on PostgreSQL); `sqlite` is the local
    database chosen explicitly; else a Valkey/Redis or PostgreSQL URL."""

    url: str | None = None
    limits: RateLimits = field(default_factory=RateLimits)


@dataclass(frozen=True)
class HttpLimits:
    """What the HTTP servers (`serve`, `mcp --http`, `console`) allow each connection and
    MCP session; workrail.mcp.http_guard says why each limit is what it is."""

    head_timeout_s: float = 10.0
    """A connection must deliver a complete request head within this long of connecting
    (and of its previous response), or it is closed."""
    keep_alive_s: int = 5
    max_connections: int = 256
    """Connections at a time; 503 beyond."""
    session_idle_s: float = 300.0
    """An abandoned Streamable HTTP session is dropped after this long idle."""
    max_sessions: int = 512
    """Streamable HTTP sessions at a time; at the cap the least recently used idle one
    makes room for a new client."""
    in_flight_grace_s: int = 30
    """How long a stopping server waits for requests in flight (each is answered)."""


@dataclass(frozen=True)
class WorkrailConfig:
    data_dir: Path
    """Files backend root; also home of the fence's SQLite database and key."""
    store_url: str | None
    """None: sessions live in `data_dir`; else a postgresql:// URL, or `memory://`."""
    discovery: DiscoveryConfig
    fence: FenceSettings
    log: LogSettings
    http: HttpLimits = field(default_factory=HttpLimits)
    allow_insecure_keys: bool = False
    """Use a keyring or fence key that others own or can access, with a logged warning,
    instead of refusing to start (for shared or unusual file systems only)."""

    @property
    def uses_postgres(self) -> bool:
        return self.store_url is not None and self.store_url.startswith(POSTGRES_SCHEMES)

    @property
    def uses_memory(self) -> bool:
        return self.store_url == MEMORY_URL

    @property
    def store_label(self) -> str:
        """Where sessions live, for a person."""
        if self.uses_postgres:
            return "PostgreSQL"
        if self.uses_memory:
            return "memory (nothing is kept after exit)"
        return str(self.data_dir)

    @property
    def fence_url(self) -> str | None:
        """Where the fence keeps its state: None for SQLite in the data directory. With
        a PostgreSQL store it is the store's database unless another one is named, so
        every replica behind a load balancer fences through the same table."""
        if self.fence.url == "sqlite":
            return None
        if self.fence.url is None:
            return self.store_url if self.uses_postgres else None
        return self.fence.url

    @property
    def fence_is_local_on_shared_store(self) -> bool:
        """The explicit `WORKRAIL_FENCE_URL=sqlite` with a PostgreSQL store: each replica
        then fences alone (for a single replica only)."""
        return self.uses_postgres and self.fence_url is None


@dataclass(frozen=True)
class Overrides:
    """What the command line says; each beats its environment variable."""

    data_dir: str | None = None
    store_url: str | None = None
    workflow_dirs: tuple[str, ...] = ()
    library_dirs: tuple[str, ...] = ()
    log_level: str | None = None
    log_file: str | None = None


def load_config(
    env: Mapping[str, str],
    overrides: Overrides = Overrides(),
    *,
    home: Path | None = None,
    cwd: Path | None = None,
) -> Result[WorkrailConfig, ConfigError]:
    """Resolve every setting; `env` is read, never written."""
    home = home if home is not None else Path.home()
    cwd = cwd if cwd is not None else Path.cwd()

    def absolute(raw: str) -> Path:
        path = Path(raw).expanduser()
        return path if path.is_absolute() else cwd / path

    raw_dir = overrides.data_dir or env.get(DATA_DIR_ENV, "").strip()
    data_dir = absolute(raw_dir) if raw_dir else home / ".workrail" / "data"

    store = _store_url(overrides.store_url, env)
    if isinstance(store, ConfigError):
        return Failure(store)

    log = _log_settings(overrides, env, absolute)
    if isinstance(log, ConfigError):
        return Failure(log)
    fence = _fence_settings(env)
    if isinstance(fence, ConfigError):
        return Failure(fence)
    insecure = _allow_insecure_keys(env)
    if isinstance(insecure, ConfigError):
        return Failure(insecure)
    http = _http_limits(env)
    if isinstance(http, ConfigError):
        return Failure(http)

    discovery = DiscoveryConfig(
        home=home,
        cwd=cwd,
        env=dict(env),
        bundled_dir=bundled_workflows_dir(),
        extra_dirs=tuple(absolute(d) for d in overrides.workflow_dirs),
        library_dirs=tuple(absolute(d) for d in overrides.library_dirs),
    )
    return Success(
        WorkrailConfig(
            data_dir=data_dir,
            store_url=store,
            discovery=discovery,
            fence=fence,
            log=log,
            http=http,
            allow_insecure_keys=insecure,
        )
    )


def _log_settings(
    overrides: Overrides, env: Mapping[str, str], absolute: Callable[[str], Path]
) -> LogSettings | ConfigError:
    level = (overrides.log_level or env.get(LOG_LEVEL_ENV, "") or DEFAULT_LOG_LEVEL).upper()
    if level not in LOG_LEVELS:
        return ConfigError(LOG_LEVEL_ENV, f"must be one of {', '.join(LOG_LEVELS)}")
    return LogSettings(level, absolute(overrides.log_file) if overrides.log_file else None)


def _fence_settings(env: Mapping[str, str]) -> FenceSettings | ConfigError:
    try:
        limits = RateLimits.from_env(env)
    except ValueError as exc:
        return ConfigError("fence rate limit", str(exc))
    fence_url = env.get(FENCE_URL_ENV, "").strip() or None
    if fence_url not in (None, "sqlite") and not fence_url.startswith(
        ("redis://", "rediss://", "unix://", *POSTGRES_SCHEMES)
    ):
        return ConfigError(
            FENCE_URL_ENV,
            "must be empty (follow the session store), 'sqlite', a redis:// URL or a "
            "postgresql:// URL",
        )
    return FenceSettings(fence_url, limits)


def _allow_insecure_keys(env: Mapping[str, str]) -> bool | ConfigError:
    insecure = env.get(INSECURE_KEYS_ENV, "").strip().lower()
    if insecure not in ("", "0", "false", "no", "1", "true", "yes"):
        return ConfigError(INSECURE_KEYS_ENV, "must be true or false")
    return insecure in ("1", "true", "yes")


def _http_limits(env: Mapping[str, str]) -> HttpLimits | ConfigError:
    defaults = HttpLimits()
    head = env.get(HEAD_TIMEOUT_ENV, "").strip()
    try:
        head_timeout_s = float(head) if head else defaults.head_timeout_s
    except ValueError:
        head_timeout_s = -1.0
    if not 0 < head_timeout_s <= 3600:
        return ConfigError(HEAD_TIMEOUT_ENV, f"must be seconds between 0 and 3600, got {head!r}")
    cap = env.get(MAX_SESSIONS_ENV, "").strip()
    if cap and (not cap.isdigit() or int(cap) < 1):
        return ConfigError(MAX_SESSIONS_ENV, f"must be a whole number >= 1, got {cap!r}")
    max_sessions = int(cap) if cap else defaults.max_sessions
    return HttpLimits(head_timeout_s=head_timeout_s, max_sessions=max_sessions)


def _store_url(flag: str | None, env: Mapping[str, str]) -> str | None | ConfigError:
    setting = "--store" if flag else STORE_URL_ENV
    raw = (flag or env.get(STORE_URL_ENV, "")).strip()
    if not raw or raw in ("files", "file"):
        return None
    if raw in (MEMORY_URL, "memory"):
        return MEMORY_URL
    if raw.startswith(POSTGRES_SCHEMES):
        problem = _postgres_url_problem(raw)
        if problem is None:
            return raw
        return ConfigError(
            setting, f"is not a PostgreSQL URL libpq can read ({problem}): {redact_url(raw)!r}"
        )
    return ConfigError(
        setting,
        "must be a postgresql://USER@HOST:PORT/DATABASE URL (or empty for files in the data "
        f"directory, or {MEMORY_URL} for a store that lasts as long as the process, for "
        f"tests and demos), got {redact_url(raw)!r}",
    )


def _postgres_url_problem(url: str) -> str | None:
    """What libpq would refuse in the URL (a bad host, an unknown parameter), so a typo is
    a configuration error at once rather than a "cannot reach" later. psycopg is imported
    only here, when a PostgreSQL URL is given and will be used anyway."""
    import psycopg.conninfo

    try:
        psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error as exc:
        text = " ".join(str(exc).split())
        return text.split(" in URI: ")[0].replace(url, "…") or type(exc).__name__
    return None


def config_from_process(overrides: Overrides = Overrides()) -> Result[WorkrailConfig, ConfigError]:
    """The process's configuration: its environment, home and working directory."""
    return load_config(os.environ, overrides)
