"""What connections are opened with, and the bounds a write's transaction runs under."""

from __future__ import annotations

from typing import Any

from returns.result import Success

from tests.store.contract import append
from tests.store.plans import Chain
from workrail.store.postgres import PostgresBackend
from workrail.store.postgres.connection import KEEPALIVES, connect_kwargs


def test_connections_keep_alive_unless_the_url_says_otherwise() -> None:
    assert KEEPALIVES.items() <= connect_kwargs("postgresql://u@db.example/wr").items()
    mine = connect_kwargs("postgresql://u@db.example/wr?keepalives_idle=5&keepalives=0")
    assert "keepalives_idle" not in mine
    assert "keepalives" not in mine
    assert mine["keepalives_count"] == KEEPALIVES["keepalives_count"]
    assert mine["prepare_threshold"] is None
    assert mine["autocommit"] is True


def test_a_write_runs_bounded_and_leaves_its_connection_as_it_found_it(
    pg_backend: PostgresBackend,
) -> None:
    chain = Chain()
    seen: dict[str, Any] = {}

    def look(txn: Any) -> Any:
        for name in ("idle_in_transaction_session_timeout", "lock_timeout"):
            row = txn.conn.execute(f"SHOW {name}").fetchone()
            seen[name] = row[0]
        seen["conn"] = txn.conn
        return txn.append(chain.start())

    assert isinstance(pg_backend.sessions.write(chain.sess, look), Success)
    assert seen["idle_in_transaction_session_timeout"] == "1min"
    assert seen["lock_timeout"] == "10s"
    # The same server connection, back in the pool: nothing outlived the write.
    names = (
        "current_setting('idle_in_transaction_session_timeout'), current_setting('lock_timeout')"
    )
    after = seen["conn"].execute(f"SELECT {names}").fetchone()
    assert after == ("0", "0")
    assert isinstance(append(pg_backend.sessions, chain.sess, chain.advance()), Success)
