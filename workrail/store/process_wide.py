"""One object per process, made on first use: what every thread of a process must share
(the files store's locks, the spare-file pool) to mean anything."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class ProcessWide(Generic[T]):
    """Made by `make` on the first `get`, the same object for every thread after."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._guard = threading.Lock()
        self._value: T | None = None

    def get(self) -> T:
        with self._guard:
            if self._value is None:
                self._value = self._make()
            return self._value
