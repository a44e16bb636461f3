"""The in-memory backend, for tests and demos: every store over plain dicts and lists
behind one lock, nothing persisted (everything is lost when the process exits). Opened
only by the composition root (workrail/app.py), for a `memory://` store URL."""

from workrail.store.memory.backend import MemoryBackend
from workrail.store.memory.storage import MemoryStorage

__all__ = ["MemoryBackend", "MemoryStorage"]
