"""The session pages: the list, one session (its run DAG and a node panel), its raw event
log, and the export download.

Handlers are plain functions of (page context, request); read handlers run in a worker
thread because the store ports block. None of them writes: the only action here
(export) is wrapped by `PageContext.wrap_write`, which checks the secret's cookie and the
Origin before it reads a byte of the body, then reads only a small urlencoded form and
checks its CSRF token.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode

import anyio
from returns.result import Failure
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from workrail.console.dag import lay_out
from workrail.console.deps import ConsoleDeps
from workrail.console.event_log import EventPage, matching, page_of, parse_filter
from workrail.console.security import CSRF_FIELD, cookie_name
from workrail.console.session_list import parse_list
from workrail.core.events import EVENT_KINDS
from workrail.core.ids import is_session_id
from workrail.core.summary import RUN_STATUSES, SessionSummary
from workrail.engine.api import EVENTS_PAGE_MAX, UNHEALTHY_BANNER, SessionInspection
from workrail.http_body import read_at_most

NOTICES: Final = {
    "archived": "Archived: the session left the default list (it is kept, and can be unarchived).",
    "unarchived": "Unarchived: the session is back in the default list.",
    "deleted": "Deleted the session.",
    "busy": "The session is being written right now; nothing was changed. Try again in a moment.",
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
            refused = self.refuse_sender(request)  # neither check needs the body
            if refused is not None:
                return refused
            form = await read_small_form(request)
            if isinstance(form, Response):
                return form
            token = form.get(CSRF_FIELD)
            if not (isinstance(token, str) and self.deps.guard.csrf_ok(token)):
                return self.error_page(
                    request,
                    403,
                    "Refused: the form's token is missing or stale. Reload the page and retry.",
                )
            return await anyio.to_thread.run_sync(handler, self, request, form)

        return endpoint

    def authorised(self, request: Request) -> bool:
        return self.deps.guard.secret_ok(request.cookies.get(cookie_name(request.scope)))

    def refuse_sender(self, request: Request) -> Response | None:
        """Why a write is refused before its body is read (a 403 page that says what to
        do), or None: it needs the secret's cookie and an Origin naming this console."""
        if not self.authorised(request):
            reason = (
                "This action needs the console's secret. Open the URL that `workrail console` "
                "printed when it started (it carries the secret), then try again."
            )
        elif not self.deps.guard.origin_ok(
            request.headers.get("origin"),
            request.headers.get("referer"),
            request.headers.get("host", ""),
        ):
            reason = "Refused: the request did not come from a page of this console."
        else:
            return None
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


MAX_FORM_BYTES: Final = 16 * 1024
"""The console's forms carry a token and an id or two: anything bigger is not one of them."""
MAX_FORM_FIELDS: Final = 16
FORM_TYPE: Final = "application/x-www-form-urlencoded"


async def read_small_form(request: Request) -> FormData | Response:
    """The body of a write as a form, read only if it is a small urlencoded one (by its
    Content-Length and again while reading, for a chunked body); otherwise a plain 413 or
    415. Multipart bodies, which a foreign page may send without CORS, are never spooled."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != FORM_TYPE:
        return PlainTextResponse(
            f"The console's actions take {FORM_TYPE} forms only.", status_code=415
        )
    too_big = PlainTextResponse(
        f"A console form is at most {MAX_FORM_BYTES} bytes.", status_code=413
    )
    try:
        declared = int(request.headers.get("content-length", "0"))
    except ValueError:
        return PlainTextResponse("Bad Content-Length.", status_code=400)
    body = await read_at_most(request, MAX_FORM_BYTES) if declared <= MAX_FORM_BYTES else None
    if body is None:
        return too_big
    try:
        fields: list[tuple[str, str | UploadFile]] = list(
            parse_qsl(
                body.decode("latin-1"),
                keep_blank_values=True,
                encoding="utf-8",
                errors="replace",
                max_num_fields=MAX_FORM_FIELDS,
            )
        )
    except ValueError:
        return PlainTextResponse("Too many form fields.", status_code=400)
    return FormData(fields)


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


# --- sessions list ----------------------------------------------------------------------


def _engine_notice(problem: Any) -> str:
    suggestion = (getattr(problem, "details", None) or {}).get("suggestion")
    return f"{problem.message}" + (f" {suggestion}" if suggestion else "")


def sessions_index(ctx: PageContext, request: Request) -> Response:
    filters, wanted = parse_list(
        request.query_params, request.query_params.getlist("status"), datetime.now(UTC)
    )
    notices = list(filters.notices)
    listed = ctx.deps.engine.list_sessions(wanted)
    summaries: tuple[SessionSummary, ...] = ()
    next_cursor = None
    if isinstance(listed, Failure):
        notices.append(f"The sessions could not be listed: {_engine_notice(listed.failure())}")
    else:
        summaries, next_cursor = listed.unwrap().summaries, listed.unwrap().next_cursor
    return ctx.render(
        request,
        "sessions.html",
        sessions=summaries,
        filters=filters,
        statuses=RUN_STATUSES,
        workflow_ids=sorted(_workflow_names(ctx)),
        next_query=filters.query(cursor=next_cursor) if next_cursor else None,
        first_query=filters.query(),
        notices=notices,
        live_url=str(request.url_for("live")),
        version=_version([(x.session_id, x.event_count, x.status, x.archived) for x in summaries]),
    )


# --- one session -------------------------------------------------------------------------


def _inspect(ctx: PageContext, request: Request, *, all_states: bool = True) -> SessionInspection:
    session_id = request.path_params["session_id"]
    _known_session(ctx, session_id)
    node_id = request.path_params.get("node_id")
    inspection = ctx.deps.engine.inspect_session(session_id, node_id, all_states=all_states)
    if not inspection.node_known:
        raise _not_found(f"Session {session_id} has no node {str(node_id)[:80]!r}.")
    return inspection


def _workflow_names(ctx: PageContext) -> dict[str, str]:
    try:
        catalog = ctx.deps.catalog()
    except Exception:  # a broken workflow directory must not take the session page down
        return {}
    return {wid: str(wf.definition.get("name", "")) for wid, wf in catalog.workflows.items()}


def _summary(ctx: PageContext, session_id: str) -> SessionSummary | None:
    found = ctx.deps.engine.session_summary(session_id)
    return found.unwrap() if not isinstance(found, Failure) else None


def _resume_call(summary: SessionSummary | None, session_id: str) -> str:
    """A `resume_session` call an agent can be handed as is: it finds this session's run
    and answers with a fresh state token (the page itself never shows a token)."""
    params: dict[str, Any] = {"sessionId": session_id}
    run = summary.primary if summary is not None else None
    if run is not None:
        params["runId"] = run.run_id
        if run.status in ("complete", "complete_with_gaps"):
            params["includeCompleted"] = True
    return json.dumps({"tool": "resume_session", "params": params}, indent=2)


MAX_OPEN_FOLDS: Final = 32
_NODE_ID: Final = re.compile(r"^node_[a-z0-9]{1,64}$")


def _open_folds(request: Request) -> tuple[frozenset[str], str]:
    """The folds asked for open (`?open=`, by the id of their first node; other values are
    ignored), and the link that opens one more."""
    wanted = [v for v in request.query_params.getlist("open") if _NODE_ID.match(v)]
    opened = frozenset(wanted[:MAX_OPEN_FOLDS])
    kept = [(k, v) for k, v in request.query_params.multi_items() if k != "open"]
    query = urlencode([*kept, *(("open", fold) for fold in sorted(opened)), ("open", "")])
    return opened, f"{request.url.path}?{query}"


def session_page(ctx: PageContext, request: Request) -> Response:
    inspection = _inspect(ctx, request)
    open_folds, fold_base = _open_folds(request)
    view = inspection.view
    selected = inspection.node.node_id if inspection.node else None
    lanes = {run.run_id: lay_out(run, selected) for run in view.runs}
    pending_id = None
    for run in view.runs:
        tip = run.nodes.get(run.preferred_tip or "")
        if tip is not None and tip.step_id:
            pending_id = tip.step_id
            break
    summary = _summary(ctx, view.session_id)
    pending = pending_id
    primary = summary.primary if summary is not None else None
    if primary is not None and primary.pending_step_id:
        # a person reads the step's title; its id (loop path and all) is on hover
        pending_id = primary.pending_step_id
        pending = primary.pending_step_title or pending_id
    if summary is not None and view.is_healthy:
        view.take_statuses(summary)
    return ctx.render(
        request,
        "session.html",
        view=view,
        summary=summary,
        run_statuses={r.run_id: r.status for r in summary.runs} if summary else {},
        resume_call=_resume_call(summary, view.session_id),
        inspection=inspection,
        node=inspection.node,
        lanes=lanes,
        open_folds=open_folds,
        fold_base=fold_base,
        pending=pending,
        pending_id=pending_id,
        workflow_names=_workflow_names(ctx),
        banner=UNHEALTHY_BANNER if view.prefix_only or not view.is_healthy else None,
        live_url=str(request.url_for("live").include_query_params(session=view.session_id)),
        version=_version(view.event_count, view.status, view.health.get("kind")),
    )


LOOKAHEAD: Final = 16
"""Events read past a page's end so its last advance can be matched to the blocked-attempt
node created in the same append."""


def _scan_events(
    ctx: PageContext, session_id: str, since: int, wanted: Any
) -> tuple[EventPage, int, list[str]]:
    """Pages of the engine's event cursor from `since` until `wanted.limit` events match:
    the page, the readable event count, and notices."""
    notices: list[str] = []
    scanned: list[Any] = []
    cursor, count, matched = since, 0, 0
    engine = ctx.deps.engine
    while True:
        got = engine.events_since(session_id, cursor, EVENTS_PAGE_MAX)
        if isinstance(got, Failure):
            problem = got.failure()
            if problem.code == "NOT_FOUND":
                raise _not_found(f"There is no session {session_id}.")
            notices.append(_engine_notice(problem))
            break
        page = got.unwrap()
        count = page.event_count
        scanned.extend(page.events)
        cursor = page.next_cursor
        matched = matching(scanned, wanted)
        if page.at_end or not page.events or matched > wanted.limit:
            break
    extra = engine.events_since(session_id, cursor, LOOKAHEAD)
    lookahead = extra.unwrap().events if not isinstance(extra, Failure) else ()
    found = page_of(scanned, wanted, lookahead)
    found.total = count
    return found, count, notices


def events_page(ctx: PageContext, request: Request) -> Response:
    session_id = request.path_params["session_id"]
    _known_session(ctx, session_id)
    summary = _summary(ctx, session_id)
    wanted = parse_filter(request.query_params, request.query_params.getlist("kind"))
    page, count, notices = _scan_events(ctx, session_id, wanted.since, wanted)
    health = summary.health if summary is not None else "unreadable"
    return ctx.render(
        request,
        "events.html",
        session_id=session_id,
        summary=summary,
        page=page,
        wanted=wanted,
        kinds=EVENT_KINDS,
        notices=[*wanted.notices, *notices],
        damaged=health != "healthy",
        health=health,
        banner=UNHEALTHY_BANNER if health != "healthy" else None,
        live_url=str(request.url_for("live").include_query_params(session=session_id)),
        version=_version(count, summary.status if summary else None, health),
    )


def export_bundle(ctx: PageContext, request: Request, form: FormData) -> Response:
    """The session's bundle as a download (its validated prefix, marked, when damaged)."""
    session_id = request.path_params["session_id"]
    _known_session(ctx, session_id)
    from workrail import __version__

    result = ctx.deps.engine.export_session(session_id, app_version=__version__)
    if isinstance(result, Failure):
        problem = result.failure()
        return ctx.error_page(request, 409, f"{problem.code}: {problem.message}")
    return Response(
        result.unwrap().data,
        media_type="application/json",
        headers={"content-disposition": f'attachment; filename="{session_id}.bundle.json"'},
    )


def _lifecycle(ctx: PageContext, request: Request, action: str, done: str, target: str) -> Response:
    session_id = request.path_params["session_id"]
    _known_session(ctx, session_id)
    engine = ctx.deps.engine
    run = {
        "archive": engine.archive,
        "unarchive": engine.unarchive,
        "delete": engine.delete_sessions,
    }
    result = run[action]([session_id])
    if isinstance(result, Failure):
        return ctx.error_page(request, 409, _engine_notice(result.failure()))
    change = result.unwrap()
    notice = "busy" if session_id in change.busy else done
    if notice == "busy":
        target = "session"
    url = request.url_for(target, **({"session_id": session_id} if target == "session" else {}))
    return RedirectResponse(f"{url}?notice={notice}", status_code=303)


def archive_session(ctx: PageContext, request: Request, form: FormData) -> Response:
    return _lifecycle(ctx, request, "archive", "archived", "session")


def unarchive_session(ctx: PageContext, request: Request, form: FormData) -> Response:
    return _lifecycle(ctx, request, "unarchive", "unarchived", "session")


def delete_session(ctx: PageContext, request: Request, form: FormData) -> Response:
    if form.get("confirm") != request.path_params["session_id"]:
        return ctx.error_page(
            request, 400, "Deleting needs the confirmation form: open the session's Delete page."
        )
    return _lifecycle(ctx, request, "delete", "deleted", "sessions")


def confirm_delete(ctx: PageContext, request: Request) -> Response:
    """The confirmation page (a read: it only shows the form that deletes)."""
    session_id = request.path_params["session_id"]
    _known_session(ctx, session_id)
    return ctx.render(
        request,
        "delete.html",
        session_id=session_id,
        summary=_summary(ctx, session_id),
        live_url=None,
        version="",
    )
