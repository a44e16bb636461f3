"""Serving the MCP server: logging set-up and the stdio / Streamable HTTP entry points.

On stdio, stdout is the wire: logs go to stderr or a file, and the SDK points fd 1 at
stderr while serving, so stray prints cannot corrupt frames. A client that goes away
(stdin EOF, or a closed pipe on our stdout) is a normal way to end, not a crash.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from pathlib import Path

import anyio

from workrail.engine.api import Engine
from workrail.mcp.server import build_server

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LOG_LEVEL = "WARNING"

log = logging.getLogger("workrail.mcp")


def configure_logging(level: str | None = None, log_file: Path | None = None) -> None:
    """Root logging to stderr (or `log_file`); never stdout. Level from the argument, then
    $WORKRAIL_LOG_LEVEL, then WARNING (the SDK logs every request at INFO)."""
    chosen = (level or os.environ.get("WORKRAIL_LOG_LEVEL") or DEFAULT_LOG_LEVEL).upper()
    if chosen not in LOG_LEVELS:
        chosen = DEFAULT_LOG_LEVEL
    handler: logging.Handler
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # force=True: replace anything configured earlier, and make the SDK's own basicConfig
    # (run when MCPServer is built) a no-op.
    logging.basicConfig(level=chosen, handlers=[handler], force=True)


def _is_broken_pipe(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_broken_pipe(e) for e in exc.exceptions)
    if isinstance(exc, BrokenPipeError | anyio.BrokenResourceError | anyio.ClosedResourceError):
        return True
    return isinstance(exc, OSError) and exc.errno == errno.EPIPE


def serve_stdio(engine: Engine) -> int:
    """Serve until the client closes stdin (or stops reading stdout); exit code 0 then."""
    server = build_server(engine)
    try:
        server.run()
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:
        if not _is_broken_pipe(exc):
            raise
        log.info("client closed the pipe; exiting")
        # Python flushes stdout at exit; a dead pipe would turn that into a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


def serve_http(engine: Engine, host: str = "127.0.0.1", port: int = 8000) -> int:
    """Streamable HTTP at http://HOST:PORT/mcp. Loopback by default; the SDK then also
    rejects requests whose Host header is not local (DNS-rebinding protection)."""
    import uvicorn

    server = build_server(engine)
    app = server.streamable_http_app(host=host)
    # log_config=None: uvicorn's default config sends access logs to stdout.
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        log_level=logging.getLevelName(logging.getLogger().level).lower(),
        lifespan="on",
    )
    try:
        anyio.run(uvicorn.Server(config).serve)
    except KeyboardInterrupt:
        return 130
    return 0
