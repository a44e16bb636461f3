"""The schema, as numbered migrations applied in order at start.

Every replica runs `migrate` when it opens the store. The migration transaction first takes
a transaction-scoped advisory lock, so replicas starting at once queue behind the first and
find its work done: each migration runs exactly once, and a crash mid-migration rolls back
whole. A database whose schema is newer than this code is refused rather than written by
code that does not know its rules. The reasons for the tables are in docs/storage.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from workrail.store.postgres.connection import Connection

MIGRATION_LOCK: Final = (0x57524B52, 1)
"""`pg_advisory_xact_lock(int, int)` key: 'WRKR', 1. The two-int key space never meets the
single-bigint one that session locks use."""

VERSION_TABLE: Final = "workrail_schema_migrations"


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    sql: str


V1 = """
CREATE TABLE workrail_sessions (
    session_id     text PRIMARY KEY,
    event_count    integer NOT NULL CHECK (event_count >= 0),
    manifest_count integer NOT NULL CHECK (manifest_count >= 0),
    created_at     timestamptz NOT NULL,
    last_activity  timestamptz NOT NULL
);

CREATE TABLE workrail_events (
    session_id  text NOT NULL REFERENCES workrail_sessions (session_id),
    event_index integer NOT NULL CHECK (event_index >= 0),
    dedupe_key  text NOT NULL,
    body        bytea NOT NULL,
    PRIMARY KEY (session_id, event_index),
    UNIQUE (session_id, dedupe_key)
);

CREATE TABLE workrail_manifest (
    session_id     text NOT NULL REFERENCES workrail_sessions (session_id),
    manifest_index integer NOT NULL CHECK (manifest_index >= 0),
    kind           text NOT NULL,
    body           bytea NOT NULL,
    PRIMARY KEY (session_id, manifest_index)
);

CREATE TABLE workrail_snapshots (
    ref  text PRIMARY KEY,
    body bytea NOT NULL
);

CREATE TABLE workrail_pinned_workflows (
    workflow_hash text PRIMARY KEY,
    body          bytea NOT NULL
);

CREATE TABLE workrail_keyring (
    name       text PRIMARY KEY,
    document   bytea NOT NULL,
    updated_at timestamptz NOT NULL
);
"""

V2 = """
ALTER TABLE workrail_snapshots ADD COLUMN stored_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE workrail_pinned_workflows ADD COLUMN stored_at timestamptz NOT NULL DEFAULT now();

CREATE TABLE workrail_session_lifecycle (
    session_id text PRIMARY KEY REFERENCES workrail_sessions (session_id) ON DELETE CASCADE,
    document   bytea NOT NULL,
    updated_at timestamptz NOT NULL
);

CREATE TABLE workrail_summaries (
    session_id     text PRIMARY KEY REFERENCES workrail_sessions (session_id) ON DELETE CASCADE,
    projection     integer NOT NULL,
    activity_us    bigint NOT NULL,
    status         text NOT NULL,
    archived       boolean NOT NULL,
    healthy        boolean NOT NULL,
    workflow_id    text,
    workspace_path text,
    repo_root_hash text,
    git_branch     text,
    git_head_sha   text,
    record         text NOT NULL,
    corpus         text NOT NULL,
    tokens         text[] NOT NULL,
    prefixes       text[] NOT NULL
);
CREATE INDEX workrail_summaries_recent ON workrail_summaries (activity_us DESC, session_id);
CREATE INDEX workrail_summaries_tokens ON workrail_summaries USING gin (tokens);
CREATE INDEX workrail_summaries_prefixes ON workrail_summaries USING gin (prefixes);
CREATE INDEX workrail_summaries_head ON workrail_summaries (git_head_sha);
CREATE INDEX workrail_summaries_branch ON workrail_summaries (git_branch);
CREATE INDEX workrail_summaries_workspace ON workrail_summaries (workspace_path);
CREATE INDEX workrail_summaries_root ON workrail_summaries (repo_root_hash);

CREATE TABLE workrail_summary_runs (
    run_id     text NOT NULL,
    session_id text NOT NULL REFERENCES workrail_summaries (session_id) ON DELETE CASCADE,
    PRIMARY KEY (run_id, session_id)
);
CREATE INDEX workrail_summary_runs_session ON workrail_summary_runs (session_id);
"""

V3 = """
ALTER TABLE workrail_snapshots ADD COLUMN state_kind text, ADD COLUMN pending_step text;
"""

V4 = """
-- written to replay cleanly over its own result (a schema rewound to before migration 3)
ALTER TABLE workrail_summaries DROP COLUMN IF EXISTS corpus, DROP COLUMN IF EXISTS tokens,
    DROP COLUMN IF EXISTS prefixes;
-- the rows lost their corpus: projected again when the backend opens (refresh_outdated)
UPDATE workrail_summaries SET projection = 0;

CREATE TABLE IF NOT EXISTS workrail_summary_terms (
    term       text COLLATE "C" NOT NULL,
    session_id text NOT NULL REFERENCES workrail_summaries (session_id) ON DELETE CASCADE,
    PRIMARY KEY (term, session_id)
);
CREATE INDEX IF NOT EXISTS workrail_summary_terms_session ON workrail_summary_terms (session_id);
"""

V5 = """
-- when each manifest record was committed (the database's clock, as last_activity); rows
-- written before this migration keep NULL: their time is unknown
ALTER TABLE workrail_manifest ADD COLUMN IF NOT EXISTS recorded_at timestamptz;
ALTER TABLE workrail_manifest ALTER COLUMN recorded_at SET DEFAULT now();
"""

V6 = """
-- the effect fence, shared by every replica (workrail/fence/postgres_backend.py); written
-- to replay cleanly over its own result, like migration 4
CREATE TABLE IF NOT EXISTS workrail_fence_checkpoints (
    workflow_hash text PRIMARY KEY,
    record        text NOT NULL,
    expires_ms    bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS workrail_fence_checkpoints_expiry ON workrail_fence_checkpoints (expires_ms);

CREATE TABLE IF NOT EXISTS workrail_fence_budgets (
    scope        text NOT NULL,
    window_index bigint NOT NULL,
    count        integer NOT NULL,
    PRIMARY KEY (scope, window_index)
);

CREATE TABLE IF NOT EXISTS workrail_fence_replays (
    key        text PRIMARY KEY,
    reply      text NOT NULL,
    expires_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS workrail_fence_replays_expiry ON workrail_fence_replays (expires_ms);

CREATE TABLE IF NOT EXISTS workrail_fence_settings (
    name  text PRIMARY KEY,
    value text NOT NULL
);
"""

MIGRATIONS: Final = (
    Migration(1, "sessions, events, manifest, snapshots, pinned workflows, keyring", V1),
    Migration(2, "session summaries and lifecycle; when content was last stored", V2),
    Migration(3, "each snapshot's engine state and pending step, recorded when stored", V3),
    Migration(4, "corpus terms as rows, so an append writes only the terms that changed", V4),
    Migration(5, "when each append was committed, for per-step timings", V5),
    Migration(6, "the effect fence's checkpoints, budgets, replies and settings", V6),
)

LATEST: Final = MIGRATIONS[-1].version


@dataclass(frozen=True)
class SchemaTooNew:
    found: int

    @property
    def message(self) -> str:
        return (
            f"The database's WorkRail schema is version {self.found}, newer than this "
            f"WorkRail knows (up to {LATEST}); upgrade WorkRail on every server that uses "
            "this database, or point --store at another database."
        )


def migrate(conn: Connection) -> int | SchemaTooNew:
    """Bring the schema to `LATEST` in one transaction; the version now in place, or why
    this code must not use the database. Raises psycopg errors for the caller to map."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} ("
            "version integer PRIMARY KEY, description text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}").fetchone()
        current = int(row[0]) if row is not None else 0
        if current > LATEST:
            return SchemaTooNew(current)
        for migration in MIGRATIONS:
            if migration.version <= current:
                continue
            conn.execute(migration.sql.encode())
            conn.execute(
                f"INSERT INTO {VERSION_TABLE} (version, description) VALUES (%s, %s)",
                (migration.version, migration.description),
            )
        return LATEST
