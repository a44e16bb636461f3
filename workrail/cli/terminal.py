"""The console every human-readable command prints through: agent-written text (titles,
notes, workflow names, ids read from disk) reaches the terminal with its control and
bidirectional characters made visible (`core.text.screen_safe`), while the styling the
command itself asks for is still drawn."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from workrail.core.text import screen_safe


class ScreenSafeConsole(Console):
    """A rich Console whose every string renderable (printed directly, or as a table cell,
    a tree label, a panel body) is made screen-safe before markup is parsed: the markup
    tags hold no control characters, so only the text's own are touched."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(screen_safe(text), **kwargs)
