"""The console's Starlette application: routes, the guard middleware and error pages.

Server-rendered pages (Jinja2, autoescaped) with a little plain JavaScript of our own for
live updates and the node panel; no front-end library and no build step. The app reads
the store through the ports it is given and writes only through the guarded actions.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, ExceptionHandler, Message, Receive, Scope, Send

from workrail.console import live, pages, workflows_page
from workrail.console.dates import time_tag
from workrail.console.deps import ConsoleDeps
from workrail.console.markdown import render_markdown
from workrail.console.security import (
    CSRF_FIELD,
    SECRET_PARAM,
    SECURITY_HEADERS,
    Guard,
    cookie_name,
)
from workrail.core.text import screen_safe

log = logging.getLogger("workrail.console")

PACKAGE_DIR = Path(__file__).resolve().parent


def visible_on_page(value: object) -> object:
    """`core.text.screen_safe` for a page: the marks are plain ASCII, so HTML-safe markup
    stays safe markup."""
    if isinstance(value, Markup):
        return Markup(screen_safe(str(value)))  # noqa: S704 - only ASCII marks are added
    if isinstance(value, str):
        return screen_safe(value)
    return value


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(PACKAGE_DIR / "templates"))
    env = templates.env
    env.filters["markdown"] = render_markdown
    env.filters["when"] = time_tag
    env.filters["visible"] = visible_on_page
    # Every {{ value }} of every page (markdown included) shows bidi and control
    # characters as visible marks, so agent text can never reorder what is displayed.
    env.finalize = visible_on_page
    env.globals["CSRF_FIELD"] = CSRF_FIELD
    env.globals["urlencode"] = urlencode
    env.trim_blocks = True
    env.lstrip_blocks = True
    # The templates ship with the package and never change under a running console:
    # compiled once here, at start-up, rather than by whoever opens the first page.
    env.auto_reload = False
    for name in env.list_templates(extensions=["html"]):
        env.get_template(name)
    return templates


class GuardMiddleware:
    """Host check on every request, the secret link turned into a cookie, and the security
    headers on every response."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if not self.guard.host_allowed(request.headers.get("host")):
            response: Response = HTMLResponse(
                "<!doctype html><title>Refused</title><p>This WorkRail console answers only "
                "to the address it printed when it started (Host header refused).</p>",
                status_code=421,
            )
            await self._send_with_headers(response, scope, receive, send)
            return
        presented = request.query_params.get(SECRET_PARAM)
        if presented is not None and request.method in ("GET", "HEAD"):
            await self._send_with_headers(
                self._accept_secret(request, presented), scope, receive, send
            )
            return
        await self.app(scope, receive, self._with_headers(send))

    def _accept_secret(self, request: Request, presented: str) -> Response:
        remaining = [(k, v) for k, v in request.query_params.multi_items() if k != SECRET_PARAM]
        target = (
            request.url.replace(query=urlencode(remaining))
            if remaining
            else request.url.replace(query="")
        )
        if not self.guard.secret_ok(presented):
            query = urlencode([*remaining, ("notice", "bad-secret")])
            return RedirectResponse(str(URL(str(target)).replace(query=query)), status_code=303)
        response = RedirectResponse(str(target), status_code=303)
        response.set_cookie(
            cookie_name(request.scope),
            self.guard.secret,
            httponly=True,
            samesite="strict",
            path=request.scope.get("root_path") or "/",
        )
        return response

    async def _send_with_headers(
        self, response: Response, scope: Scope, receive: Receive, send: Send
    ) -> None:
        await response(scope, receive, self._with_headers(send))

    def _with_headers(self, send: Send) -> Send:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                for name, value in SECURITY_HEADERS.items():
                    if name.encode() not in present:
                        headers.append((name.encode(), value.encode()))
                message = {**message, "headers": headers}
            await send(message)

        return wrapped


def _routes(context: pages.PageContext, streams: live.Streams) -> list[Route | Mount]:
    """Every page and action of the console; writes go through `wrap_write` (the secret)."""
    return [
        Route("/", context.wrap(pages.sessions_index), name="sessions"),
        Route("/sessions/{session_id}", context.wrap(pages.session_page), name="session"),
        Route(
            "/sessions/{session_id}/nodes/{node_id}",
            context.wrap(pages.session_page),
            name="node",
        ),
        Route("/sessions/{session_id}/events", context.wrap(pages.events_page), name="events"),
        Route(
            "/sessions/{session_id}/export",
            context.wrap_write(pages.export_bundle),
            methods=["POST"],
            name="export",
        ),
        *(
            Route(
                f"/sessions/{{session_id}}/{action}",
                context.wrap_write(handler),
                methods=["POST"],
                name=action,
            )
            for action, handler in (
                ("archive", pages.archive_session),
                ("unarchive", pages.unarchive_session),
                ("delete", pages.delete_session),
            )
        ),
        Route(
            "/sessions/{session_id}/delete",
            context.wrap(pages.confirm_delete),
            methods=["GET"],
            name="confirm_delete",
        ),
        Route("/workflows", context.wrap(workflows_page.catalog_page), name="workflows"),
        Route(
            "/workflows/{workflow_id}",
            context.wrap(workflows_page.workflow_page),
            name="workflow",
        ),
        Route("/live", live.stream_endpoint(streams), name="live"),
        Mount("/static", app=StaticFiles(directory=str(PACKAGE_DIR / "static")), name="static"),
    ]


def _error_pages(context: pages.PageContext) -> dict[Any, ExceptionHandler]:
    """Errors answered with the console's own page, never Starlette's text or a trace."""

    async def not_found(request: Request, exc: Exception) -> Response:
        detail = exc.detail if isinstance(exc, HTTPException) else "Not found."
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        return context.error_page(request, status, str(detail))

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("console page failed: %s", request.url.path, exc_info=exc)
        return context.error_page(
            request, 500, "This page could not be shown; the console's log says why."
        )

    return {HTTPException: not_found, 500: server_error}


def build_console(deps: ConsoleDeps) -> Starlette:
    """The console as an ASGI app (mountable, e.g. at /console under `workrail serve`)."""
    context = pages.PageContext(deps, _templates())
    streams = live.Streams(deps.backend.watch)
    app = Starlette(
        routes=_routes(context, streams),
        middleware=[Middleware(GuardMiddleware, guard=deps.guard)],
        exception_handlers=_error_pages(context),
    )
    app.state.deps = deps
    app.state.live_streams = streams
    return app


def stop_live_streams(app: Starlette) -> None:
    """End the console's open live streams (call when the server begins to stop)."""
    streams = getattr(app.state, "live_streams", None)
    if isinstance(streams, live.Streams):
        streams.stop()
