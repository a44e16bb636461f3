"""UTF-8 byte budgets and the canonical truncation marker (spec 20-events §5): the one
home of every size limit the durable records share, and the one UTF-8 cutter."""

from __future__ import annotations

from typing import Final

TRUNCATION_MARKER: Final = "\n\n[TRUNCATED]"
NOTES_MAX_BYTES: Final = 4096
CONTEXT_MAX_BYTES: Final = 262_144
CONTEXT_MAX_DEPTH: Final = 64
REHYDRATE_PROMPT_MAX_BYTES: Final = 12_288
BLOCKERS_MAX: Final = 10
BLOCKER_MESSAGE_MAX_BYTES: Final = 512
BLOCKER_FIX_MAX_BYTES: Final = 1024
TRACE_SUMMARY_MAX_BYTES: Final = 512
TRACE_TOTAL_MAX_BYTES: Final = 8192
TRACE_MAX_ENTRIES: Final = 25
DEDUPE_KEY_MAX_CHARS: Final = 256


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest start of `text` within `max_bytes` UTF-8 bytes, ending on a character
    boundary (an incomplete trailing sequence is dropped)."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def truncate_utf8(text: str, max_bytes: int, marker: str = TRUNCATION_MARKER) -> str:
    """Keep `text` if it fits in `max_bytes`; else cut it on a character boundary and append
    the marker so the result is at most `max_bytes` bytes.

    The cut drops any incomplete trailing UTF-8 sequence (the reference leaves a lone lead
    byte there and writes an invalid event; we do not).
    """
    if utf8_len(text) <= max_bytes:
        return text
    room = max_bytes - utf8_len(marker)
    if room <= 0:
        return cut_utf8(text, max_bytes)
    return cut_utf8(text, room) + marker


def truncate_notes(notes: str) -> str:
    """Notes stored in a recap: at most 4096 bytes, marker included."""
    return truncate_utf8(notes, NOTES_MAX_BYTES)
