"""The in-process cache of validated sessions, shared by every session of one store.

Each session's entry is guarded by that session's own state lock, but the cache that holds
all of them is touched by threads holding *different* session locks (an HTTP server runs
engine calls on several threads), so the cache itself takes one lock of its own around
every use. The events it holds are counted as entries come and go, so keeping the event
bound costs nothing per load.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, Protocol, TypeVar


class Sized(Protocol):
    """What the cache bounds: an entry's number of events."""

    @property
    def event_count(self) -> int: ...


V = TypeVar("V", bound=Sized)


class SessionCache(Generic[V]):
    """Most recently used sessions, within `max_sessions` and `max_events` (one session
    larger than the event bound is still kept). Safe to use from any thread."""

    def __init__(self, max_sessions: int, max_events: int) -> None:
        self._max_sessions = max_sessions
        self._max_events = max_events
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._held_events = 0

    def get(self, session_id: str) -> V | None:
        """The cached entry, marked most recently used, or None."""
        with self._lock:
            found = self._entries.get(session_id)
            if found is None:
                return None
            self._entries.move_to_end(session_id)
            return found[0]

    def remember(self, session_id: str, entry: V) -> None:
        """Cache (or re-count, after it grew) an entry, evicting the least recently used."""
        with self._lock:
            previous = self._entries.pop(session_id, None)
            if previous is not None:
                self._held_events -= previous[1]
            counted = entry.event_count
            self._entries[session_id] = (entry, counted)
            self._held_events += counted
            while len(self._entries) > self._max_sessions or (
                len(self._entries) > 1 and self._held_events > self._max_events
            ):
                _, (_dropped, dropped_count) = self._entries.popitem(last=False)
                self._held_events -= dropped_count

    def forget(self, session_id: str) -> None:
        with self._lock:
            previous = self._entries.pop(session_id, None)
            if previous is not None:
                self._held_events -= previous[1]

    @property
    def held_events(self) -> int:
        with self._lock:
            return self._held_events

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
