"""`workrail mcp` and `workrail serve`: the MCP server on stdio or Streamable HTTP, and
the one-port HTTP server with the effect-checkpoint API and the web console."""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

from returns.result import Failure

from workrail import __version__
from workrail.cli.context import INTERRUPTED, Cli, add_command, exit_now, port_number
from workrail.cli.listen import bind_listener, bind_problem

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from workrail.engine.api import Engine
    from workrail.fence import FenceService

log = logging.getLogger("workrail.cli")


@contextmanager
def _serving(cli: Cli) -> Iterator[tuple[Engine, FenceService | None]]:
    """Logging, the engine and the fence service for a server command. A fence that
    cannot start leaves the workflow tools up, with a warning; the fence is closed when
    the server stops."""
    from workrail.mcp.logs import configure_logging

    configure_logging(cli.config.log)
    engine = cli.engine()
    fence = _open_fence(cli)
    try:
        yield engine, fence
    finally:
        if fence is not None:
            fence.close()


def _open_fence(cli: Cli) -> FenceService | None:
    """The fence service, or None (with a warning) when it cannot start."""
    from workrail.app import open_fence

    opened = open_fence(cli.config)
    if isinstance(opened, Failure):
        log.warning("effect_checkpoint is disabled: %s", opened.failure().message)
        return None
    return opened.unwrap()


def _announce(cli: Cli, line: str, *, always: bool = False) -> Callable[[], None]:
    """The ready line, on stderr (never stdout, the protocol's). An HTTP server prints it
    wherever stderr goes (`always`: a terminal, nohup's file, a service manager's journal),
    since whoever started it needs its URL and the console's secret link from there. On
    stdio the client that spawned the server reads only the protocol: the line is printed
    when a person watches (stderr is a terminal) and logged at INFO otherwise."""

    def ready() -> None:
        if always or cli.err.isatty():
            print(line, file=cli.err, flush=True)
        else:
            log.info("%s", line)

    return ready


def _stopped(cli: Cli, command: str, code: int) -> int:
    if code == INTERRUPTED and cli.err.isatty():
        print(f"workrail {command}: stopped.", file=cli.err, flush=True)
    return code


@contextmanager
def _ctrl_c_stops_at_once(cli: Cli, command: str) -> Iterator[None]:
    """On stdio the SDK reads stdin in a worker thread that cannot be cancelled, so the
    event loop's own Ctrl-C handling waits for the next line of input. Exit at once
    instead: every append is crash-safe (the store is tested against SIGKILL at each step),
    and a call in flight is simply never answered."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        _stopped(cli, command, INTERRUPTED)
        exit_now(INTERRUPTED)

    previous = signal.signal(signal.SIGINT, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _where(cli: Cli, fence: FenceService | None) -> str:
    tools = "effect_checkpoint on" if fence is not None else "effect_checkpoint off"
    return f"sessions in {cli.config.store_label}; {tools}"


def _listen(cli: Cli, command: str) -> socket.socket | None:
    """The listening socket, or None once a busy port is reported (exit 1)."""
    try:
        return bind_listener(cli.args.host, cli.args.port)
    except OSError as exc:
        cli.err.write(bind_problem(command, cli.args.host, cli.args.port, exc) + "\n")
        return None


@contextmanager
def _closing(sock: socket.socket | None) -> Iterator[None]:
    """The listener is closed however the command ends (uvicorn closes it when it stops,
    but not when the store fails to open first)."""
    try:
        yield
    finally:
        if sock is not None:
            sock.close()


def _http_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def run_mcp(cli: Cli) -> int:
    """Serve MCP; stdio unless --http. Nothing but protocol is written to stdout."""
    args = cli.args
    if not args.http and args.stdio != "sdk":
        return _run_stdio(cli)
    sock = None
    if args.http:
        sock = _listen(cli, "mcp")
        if sock is None:
            return 1
    with _closing(sock), _serving(cli) as (engine, fence):
        if sock is not None:
            url = _http_url(args.host, sock.getsockname()[1])
            ready = _announce(
                cli,
                f"workrail mcp {__version__}: ready at {url}/mcp ({_where(cli, fence)}). "
                "Ctrl-C stops it.",
                always=True,
            )
            from workrail.mcp.transport import serve_http

            code = serve_http(
                engine,
                args.host,
                args.port,
                fence,
                on_ready=ready,
                sock=sock,
                limits=cli.config.http,
            )
        else:
            ready = _announce(
                cli,
                f"workrail mcp {__version__}: ready on stdio ({_where(cli, fence)}). An MCP "
                "client talks to it over stdin/stdout; Ctrl-C stops it.",
            )
            # Not workrail.mcp.transport: stdio starts without the SDK (see stdio_serve).
            from workrail.mcp.stdio_serve import serve_stdio

            with _ctrl_c_stops_at_once(cli, "mcp"):
                code = serve_stdio(engine, fence, on_ready=ready, sdk=args.stdio == "sdk")
    return _stopped(cli, "mcp", code)


def _run_stdio(cli: Cli) -> int:
    """WorkRail's stdio transport: the store and the fence open on a thread of their own,
    and the SDK's server is built there when a request needs it, while the first requests
    are answered without it (workrail.mcp.stdio_serve); the fence is closed when the server
    stops."""
    from workrail.mcp.logs import configure_logging
    from workrail.mcp.stdio_serve import serve_stdio_early

    configure_logging(cli.config.log)
    opened: list[FenceService | None] = []

    def open_fence() -> FenceService | None:
        opened.append(_open_fence(cli))
        return opened[0]

    def ready() -> None:
        _announce(
            cli,
            f"workrail mcp {__version__}: ready on stdio ({_where(cli, opened[0])}). An MCP "
            "client talks to it over stdin/stdout; Ctrl-C stops it.",
        )()

    try:
        with _ctrl_c_stops_at_once(cli, "mcp"):
            code = serve_stdio_early(cli.engine, open_fence, cli.config, on_ready=ready)
    finally:
        for fence in opened:
            if fence is not None:
                fence.close()
    return _stopped(cli, "mcp", code)


def run_serve(cli: Cli) -> int:
    """MCP at /mcp, the fence's HTTP routes and the web console at /console, on one
    loopback port."""
    from workrail.console.security import browse_host
    from workrail.console.web import stop_live_streams
    from workrail.mcp.transport import serve_http

    args = cli.args
    sock = _listen(cli, "serve")
    if sock is None:
        return 1
    port = sock.getsockname()[1]
    with _closing(sock), _serving(cli) as (engine, fence):
        url = _http_url(args.host, port)
        fence_line = f", effect checkpoint API at {url}/v1/tools/workflow-checkpoint"
        console, console_line = _console(cli, args.host, _http_url(browse_host(args.host), port))
        ready = _announce(
            cli,
            f"workrail serve {__version__}: MCP at {url}/mcp"
            f"{fence_line if fence is not None else ''}{console_line} ({_where(cli, fence)}). "
            "Ctrl-C stops it.",
            always=True,
        )
        code = serve_http(
            engine,
            args.host,
            args.port,
            fence,
            fence_http=True,
            on_ready=ready,
            console=console,
            on_stop=None if console is None else lambda: stop_live_streams(console),
            sock=sock,
            limits=cli.config.http,
        )
    return _stopped(cli, "serve", code)


def _console(cli: Cli, host: str, url: str) -> tuple[Starlette | None, str]:
    """The web console for /console and the words that announce it (its URL carries this
    start's secret, which its actions need)."""
    from workrail.app import build_console
    from workrail.console.security import SECRET_PARAM, Guard

    guard = Guard.for_bind(host)
    built = build_console(cli.config, cli.backend(), guard, __version__)
    if isinstance(built, Failure):
        log.warning("the web console is disabled: %s", built.failure().message)
        return None, ""
    return built.unwrap(), f", console at {url}/console/?{SECRET_PARAM}={guard.secret}"


def _server_flags(parser: argparse.ArgumentParser) -> None:
    """Bind address, port and logging, shared by mcp and serve."""
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default loopback)")
    parser.add_argument("--port", type=port_number, default=8000, help="HTTP port (default 8000)")
    parser.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        type=str.upper,
        default=None,
        help="log level (default $WORKRAIL_LOG_LEVEL or WARNING)",
    )
    parser.add_argument("--log-file", metavar="FILE", default=None, help="log here, not stderr")


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    mcp = add_command(
        subparsers,
        common,
        "mcp",
        "serve the MCP tools (stdio, or Streamable HTTP with --http)",
        "Serve WorkRail's MCP tools. Logs go to stderr or --log-file, never stdout.",
    )
    mcp.add_argument("--http", action="store_true", help="serve Streamable HTTP at /mcp")
    mcp.add_argument(
        "--stdio",
        choices=["workrail", "sdk"],
        default="workrail",
        help="stdio transport: WorkRail's (default; no thread hops, answers every "
        "unparseable frame) or the MCP SDK's own (the reference)",
    )
    _server_flags(mcp)
    mcp.set_defaults(handler=run_mcp)

    serve = add_command(
        subparsers,
        common,
        "serve",
        "serve MCP (Streamable HTTP) and the effect checkpoint HTTP API on one port",
        "One HTTP server: the MCP endpoint at /mcp and GET/POST "
        "/v1/tools/workflow-checkpoint. Binds to loopback unless --host says otherwise.",
    )
    _server_flags(serve)
    serve.set_defaults(handler=run_serve)
