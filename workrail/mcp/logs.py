"""Where the servers log: stderr or a file, never stdout (on stdio, stdout is the wire)."""

from __future__ import annotations

import logging
import sys

from workrail.config import LogSettings


def configure_logging(settings: LogSettings) -> None:
    """Root logging to stderr (or the settings' file); never stdout. The default level is
    WARNING because the SDK logs every request at INFO."""
    handler: logging.Handler
    if settings.file is not None:
        settings.file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(settings.file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # force=True: replace anything configured earlier, and make the SDK's own basicConfig
    # (run when MCPServer is built) a no-op.
    logging.basicConfig(level=settings.level, handlers=[handler], force=True)
