"""The session pages: the list, one session (its run DAG and a node panel), its raw event
log, and the export download.

Handlers are plain functions of (page context, request); read handlers run in a worker
thread because the store ports block. None of them writes: the only action here
(export) is wrapped by `PageContext.wrap_write`, which checks secret, CSRF and Origin
first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
from returns.result import Failure
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.templating import Jinja2Templates

from workrail.bundle.export import bundle_bytes, export_session, new_bundle_id, utc_now
from workrail.console.dag import lay_out
from workrail.console.deps import ConsoleDeps
from workrail.console.event_log import page_of, parse_filter
from workrail.console.security import COOKIE_NAME, CSRF_FIELD
from workrail.core.events import EVENT_KINDS
from workrail.core.ids import is_session_id
from workrail.engine.session_inspect import SessionInspection, inspect_session
from workrail.engine.sessions_view import UNHEALTHY_BANNER, SessionView, load_session

LIST_PAGE: Final = 50
NOTICES: Final = {
    "bad-secret": "That link's secret is not this console's (a new one is printed at every "
    "start): actions stay disabled. Open the URL the running `workrail console` printed.",
}

Handler = Callable[["PageContext", Request], Response]
WriteHandler = Callable[["PageContext", Request, FormData], Response]


@dataclass(frozen=True)
class PageContext:
    deps: ConsoleDeps
    templates: Jinja2Templates

    # --- plumbing ---------------------------------------------------------------------

    def wrap(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await anyio.to_thread.run_sync(handler, self, request)

        return endpoint

    def wrap_write(self, handler: WriteHandler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            form = await request.form()
            refused = self.refuse_write(request, form)
            if refused is not None:
                return refused
            return await anyio.to_thread.run_sync(handler, self, request, form)

        return endpoint

    def authorised(self, request: Request) -> bool:
        return self.deps.guard.secret_ok(request.cookies.get(COOKIE_NAME))

    def refuse_write(self, request: Request, form: FormData) -> Response | None:
        """Why a write is refused (a 403 page that says what to do), or None."""
        guard = self.deps.guard
        if not self.authorised(request):
            reason = (
                "This action needs the console's secret. Open the URL that `workrail console` "
                "printed when it started (it carries the secret), then try again."
            )
        elif not guard.origin_ok(
            request.headers.get("origin"),
            request.headers.get("referer"),
            request.headers.get("host", ""),
        ):
            reason = "Refused: the request did not come from a page of this console."
        else:
            token = form.get(CSRF_FIELD)
            if isinstance(token, str) and guard.csrf_ok(token):
                return None
            reason = "Refused: the form's token is missing or stale. Reload the page and retry."
        return self.error_page(request, 403, reason)

    def render(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        authorised = self.authorised(request)
        notices = list(values.pop("notices", ()))
        notice = request.query_params.get("notice")
        if notice in NOTICES:
            notices.append(NOTICES[notice])
        values.update(
            request=request,
            authorised=authorised,
            csrf_token=self.deps.guard.csrf if authorised else "",
            notices=notices,
            location=self.deps.backend.location,
            app_version=self.deps.app_version,
        )
        return self.templates.TemplateResponse(request, template, values, status_code=status)

    def error_page(self, request: Request, status: int, message: str) -> HTMLResponse:
        titles = {403: "Not allowed", 404: "Not found", 405: "Not allowed", 500: "Error"}
        return self.render(
            request,
            "error.html",
            status,
            title=titles.get(status, "Error"),
            message=message,
            live_url=None,
            version="",
        )


def _not_found(what: str) -> HTTPException:
    return HTTPException(404, what)


def _known_session(ctx: PageContext, session_id: str) -> None:
    if not is_session_id(session_id):
        raise _not_found(
            f"{session_id[:80]!r} is not a session id (they look like sess_ followed by 26 "
            "letters and digits)."
        )
    exists = ctx.deps.backend.sessions.exists(session_id)
    if not exists.value_or(False):
        raise _not_found(f"There is no session {session_id} in {ctx.deps.backend.location}.")


def _version(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


# --- sessions list (until the query port lands: one page of ids at a time) ------------


def sessions_index(ctx: PageContext, request: Request) -> Response:
    notices: list[str] = []
    after = request.query_params.get("after") or None
    if after is not None and not is_session_id(after):
        notices.append(f"Ignored after={after[:40]!r}: not a session id.")
        after = None
    page = ctx.deps.backend.sessions.list_ids(after=after, limit=LIST_PAGE + 1)
    if isinstance(page, Failure):
        notices.append(f"The store could not list sessions: {page.failure().message}")
        ids: list[str] = []
    else:
        ids = page.unwrap()
    more = len(ids) > LIST_PAGE
    ids = ids[:LIST_PAGE]
    views: list[SessionView] = [load_session(ctx.deps.backend, sid) for sid in ids]
    views.sort(key=lambda v: v.last_activity or "", reverse=True)
    return ctx.render(
        request,
        "sessions.html",
        sessions=views,
        next_after=ids[-1] if more and ids else None,
        first_page=after is None,
        notices=notices,
        live_url=str(request.url_for("live")),
        version=_version([(v.session_id, v.event_count, v.status) for v in views]),
    )


# --- one session -------------------------------------------------------------------------


def _inspect(ctx: PageContext, request: Request, *, all_states: bool = True) -> SessionInspection:
    session_id = request.path_params["session_id"]
    _known_session(ctx, session_id)
    node_id = request.path_params.get("node_id")
    inspection = inspect_session(ctx.deps.backend, session_id, node_id, all_states=all_states)
    if not inspection.node_known:
        raise _not_found(f"Session {session_id} has no node {str(node_id)[:80]!r}.")
    return inspection


def _workflow_names(ctx: PageContext) -> dict[str, str]:
    try:
        catalog = ctx.deps.catalog()
    except Exception:  # a broken workflow directory must not take the session page down
        return {}
    return {wid: str(wf.definition.get("name", "")) for wid, wf in catalog.workflows.items()}


def session_page(ctx: PageContext, request: Request) -> Response:
    inspection = _inspect(ctx, request)
    view = inspection.view
    selected = inspection.node.node_id if inspection.node else None
    lanes = {run.run_id: lay_out(run, selected) for run in view.runs}
    pending = None
    for run in view.runs:
        tip = run.nodes.get(run.preferred_tip or "")
        if tip is not None and tip.step_id:
            pending = tip.step_id
            break
    return ctx.render(
        request,
        "session.html",
        view=view,
        inspection=inspection,
        node=inspection.node,
        lanes=lanes,
        pending=pending,
        workflow_names=_workflow_names(ctx),
        banner=UNHEALTHY_BANNER if view.prefix_only or not view.is_healthy else None,
        live_url=str(request.url_for("live").include_query_params(session=view.session_id)),
        version=_version(view.event_count, view.status, view.health.get("kind")),
    )


def events_page(ctx: PageContext, request: Request) -> Response:
    inspection = _inspect(ctx, request, all_states=False)
    view = inspection.view
    wanted = parse_filter(request.query_params, request.query_params.getlist("kind"))
    page = page_of(inspection.events, wanted)
    return ctx.render(
        request,
        "events.html",
        view=view,
        page=page,
        wanted=wanted,
        kinds=EVENT_KINDS,
        notices=wanted.notices,
        banner=UNHEALTHY_BANNER if view.prefix_only or not view.is_healthy else None,
        live_url=str(request.url_for("live").include_query_params(session=view.session_id)),
        version=_version(view.event_count, view.status),
    )


def export_bundle(ctx: PageContext, request: Request, form: FormData) -> Response:
    """The session's bundle as a download (its validated prefix, marked, when damaged)."""
    session_id = request.path_params["session_id"]
    _known_session(ctx, session_id)
    from workrail import __version__

    result = export_session(
        ctx.deps.backend,
        session_id,
        bundle_id=new_bundle_id(),
        exported_at=utc_now(),
        app_version=__version__,
    )
    if isinstance(result, Failure):
        problem = result.failure()
        return ctx.error_page(request, 409, f"{problem.code}: {problem.message}")
    data = bundle_bytes(result.unwrap())
    return Response(
        data,
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="{session_id}.bundle.json"'},
    )
