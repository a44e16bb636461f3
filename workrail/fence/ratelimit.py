"""Request budgets: a fixed 60-second window per client digest and one global window.

Fixed windows need one counter per scope and window, which both backends update inside the
same atomic step that checks them; a burst of at most twice the limit across a window edge
is the accepted cost. Windows are numbered from the injected clock, never the backend's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

DEFAULT_CLIENT_RPM: Final = 30
DEFAULT_GLOBAL_RPM: Final = 120
"""Defined here, not in the pydantic contract, so the configuration loads without pydantic."""
WINDOW_MS: Final = 60_000
CLIENT_RPM_ENV: Final = "WORKRAIL_FENCE_CLIENT_RPM"
GLOBAL_RPM_ENV: Final = "WORKRAIL_FENCE_GLOBAL_RPM"


@dataclass(frozen=True)
class RateLimits:
    """Requests per minute; 0 means unlimited."""

    client_rpm: int = DEFAULT_CLIENT_RPM
    global_rpm: int = DEFAULT_GLOBAL_RPM

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RateLimits:
        return cls(
            client_rpm=_read_rpm(env, CLIENT_RPM_ENV, DEFAULT_CLIENT_RPM),
            global_rpm=_read_rpm(env, GLOBAL_RPM_ENV, DEFAULT_GLOBAL_RPM),
        )


def _read_rpm(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ValueError(f"{name} must be a whole number >= 0 (0 = unlimited), got {raw!r}")
    return int(raw)


def window_of(now_ms: int) -> int:
    return now_ms // WINDOW_MS


def retry_after_seconds(now_ms: int) -> int:
    """Whole seconds until the current window ends, at least 1."""
    remaining_ms = (window_of(now_ms) + 1) * WINDOW_MS - now_ms
    return max(1, -(-remaining_ms // 1000))


def over_limit(count: int, limit: int) -> bool:
    return limit > 0 and count >= limit
