"""Opening the PostgreSQL backend: what a person sees when the URL is wrong, and that
nothing of the password ever shows."""

from __future__ import annotations

import psycopg
import pytest
from returns.result import Failure

from tests.services.postgres import PostgresCluster, free_port
from workrail.store.postgres import open_postgres_backend


def _refusal(url: str, code: str = "STORE_UNAVAILABLE") -> str:
    opened = open_postgres_backend(url)
    assert isinstance(opened, Failure)
    error = opened.failure()
    assert error.code == code
    assert "\n" not in error.message
    message: str = error.message
    return message


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    message = _refusal(f"postgresql://workrail:s3cret-pw@127.0.0.1:{free_port()}/db")
    assert "Cannot reach PostgreSQL" in message
    assert "s3cret-pw" not in message
    assert "postgresql://workrail:***@127.0.0.1" in message


def test_wrong_credentials_are_named_as_such(postgres_cluster: PostgresCluster) -> None:
    # the URL must change: retrying cannot help, so it is not labelled retryable
    message = _refusal(
        postgres_cluster.url("postgres", password="not-the-password"), code="CONFIG_INVALID"
    )
    assert "refused the credentials" in message
    assert "not-the-password" not in message
    assert postgres_cluster.password not in message


def test_a_missing_database_says_to_create_it(postgres_cluster: PostgresCluster) -> None:
    message = _refusal(postgres_cluster.url("no_such_database"), code="CONFIG_INVALID")
    assert "does not exist" in message
    assert "createdb" in message
    assert postgres_cluster.password not in message


def test_a_user_without_the_right_to_create_tables_is_told_so(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE ROLE reader LOGIN PASSWORD 'reader-pw'")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    url = postgres_url.replace(f"workrail:{postgres_cluster.password}", "reader:reader-pw")
    try:
        message = _refusal(url)
        assert "create tables" in message
        assert "reader-pw" not in message
    finally:
        with psycopg.connect(postgres_cluster.url(), autocommit=True) as conn:
            database = postgres_url.rsplit("/", 1)[1]
            conn.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
            conn.execute("DROP ROLE reader")


def test_synchronous_commit_off_is_refused(postgres_url: str) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" SET synchronous_commit = off')
    assert "synchronous_commit" in _refusal(postgres_url)


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_location_never_shows_the_password(
    postgres_cluster: PostgresCluster, postgres_url: str, scheme: str
) -> None:
    url = postgres_url.replace("postgresql://", f"{scheme}://", 1)
    backend = open_postgres_backend(url).unwrap()
    try:
        assert postgres_cluster.password not in backend.location
        assert backend.location.startswith(f"{scheme}://workrail:***@127.0.0.1:")
    finally:
        backend.close()
