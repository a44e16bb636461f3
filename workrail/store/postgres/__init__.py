"""The PostgreSQL backend, for teams: several server replicas on one database, with the
guarantees of the file backend (one advance per ack, clean forks, nothing acknowledged
lost). Opened only by the composition root (workrail/app.py)."""

from workrail.store.postgres.backend import PostgresBackend, open_postgres_backend

__all__ = ["PostgresBackend", "open_postgres_backend"]
