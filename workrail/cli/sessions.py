"""`workrail sessions …`: list, search, show, follow and tidy sessions.

Thin: arguments become an engine request, results are rendered — full session ids always
(a narrow terminal gets a stacked layout rather than cut ids), `--json` for machines.
Every command that takes a session id takes any unique start of one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from returns.result import Failure
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from workrail.cli.context import Cli, CliExit, add_command
from workrail.cli.session_tree import print_whole, session_tree
from workrail.core.errors import envelope
from workrail.core.summary import RUN_STATUSES, SessionSummary
from workrail.core.wording import counted, did_you_mean
from workrail.engine.api import (
    UNHEALTHY_BANNER,
    LifecycleChange,
    ListRequest,
    PruneRequest,
    SessionList,
)

WIDE: Final = 110
"""Below this many columns the list is stacked (id on its own line) instead of a table."""
DEFAULT_LIMIT: Final = 20
FOLLOW_POLL: Final = 1.0
EVENTS_READ: Final = 1000
"""Events asked of the engine at a time (its page maximum)."""
_DURATION = re.compile(r"^\s*(\d+)\s*(m|min|h|d|w)\s*$")
_UNITS = {"m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
LIST_HELP: Final = "list, search, follow and tidy sessions"
LIST_DESCRIPTION: Final = (
    "List sessions, newest activity first, with status, progress and title. Archived "
    "sessions are left out unless --all. Any unique start of a session id works wherever "
    "an id is asked for."
)
SUBCOMMANDS: Final = ("show", "archive", "unarchive", "delete", "prune", "events", "reindex")


def parse_duration(text: str, flag: str) -> timedelta:
    match = _DURATION.match(text.lower())
    if match is None or int(match.group(1)) <= 0:
        raise CliExit(
            envelope(
                "VALIDATION_ERROR",
                f"{flag} takes a positive age like 30d, 12h, 90m or 2w; got {text!r}.",
                f"For example: {flag} 30d",
            )
        )
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def parse_since(text: str) -> datetime:
    """An age (`7d`: active in the last 7 days) or an ISO date/time (UTC unless given)."""
    if _DURATION.match(text.lower()):
        return datetime.now(UTC) - parse_duration(text, "--since")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CliExit(
            envelope(
                "VALIDATION_ERROR",
                f"--since takes an age (7d, 12h) or a date (2026-01-31); got {text!r}.",
                "For example: --since 7d",
            )
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_count(text: str, flag: str, *, low: int = 0) -> int:
    if not re.fullmatch(r"\s*\d+\s*", text or "") or int(text) < low:
        raise CliExit(
            envelope(
                "VALIDATION_ERROR",
                f"{flag} takes a whole number (at least {low}); got {text!r}.",
                f"For example: {flag} {max(low, 20)}",
            )
        )
    return int(text)


def _engine_result(cli: Cli, result: Any) -> Any:
    if isinstance(result, Failure):
        raise CliExit(result.failure().to_envelope())
    return result.unwrap()


# --- list --------------------------------------------------------------------------------


def _ago(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    seconds = max(0, int((datetime.now(UTC) - moment).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"


def _progress(summary: SessionSummary) -> str:
    run = summary.primary
    return "-" if run is None else f"{run.steps_done}/{run.steps_known}"


def _status(summary: SessionSummary) -> str:
    parts: list[str] = [summary.status]
    if summary.archived:
        parts.append("archived")
    if not summary.is_healthy:
        parts.append(summary.health)
    return ", ".join(parts)


def _list_request(args: argparse.Namespace) -> ListRequest:
    return ListRequest(
        statuses=tuple(args.status or ()),
        workflow=args.workflow,
        workspace=args.workspace,
        branch=args.branch,
        text=args.search,
        since=None if args.since is None else parse_since(args.since),
        archived="include" if args.all else "exclude",
        limit=parse_count(args.limit, "--limit", low=1),
        cursor=args.cursor,
    )


def run_list(cli: Cli) -> int:
    args = cli.args
    request = _list_request(args)
    listing: SessionList = _engine_result(cli, cli.engine().list_sessions(request))
    if cli.as_json:
        cli.print_json(listing.to_json())
        return 0
    console = cli.console()
    where = cli.backend().location
    if not listing.summaries:
        hint = "" if args.all else " (archived sessions are left out; --all shows them)"
        console.print(f"No sessions match in {escape(where)}{hint}.", soft_wrap=True)
        return 0
    if console.width >= WIDE or not console.is_terminal:
        _print_table(console, listing.summaries, where)
    else:
        console.print(f"Sessions in {escape(where)}", soft_wrap=True)
        for s in listing.summaries:
            console.print(f"[bold]{s.session_id}[/]", soft_wrap=True)
            console.print(
                f"  {escape(_status(s))} · {_progress(s)} · {escape(s.workflow_id or '-')} · "
                f"{_ago(s.last_activity)}",
                soft_wrap=True,
            )
            console.print(f"  {escape(s.display_title)}", soft_wrap=True)
    if listing.next_cursor is not None:
        console.print(
            f"More sessions: add --cursor {listing.next_cursor} (or raise --limit).",
            soft_wrap=True,
        )
    console.print(
        "Show one: workrail sessions show ID · follow it: workrail sessions events ID --follow",
        soft_wrap=True,
        style="dim",
    )
    return 0


def _print_table(console: Console, summaries: Sequence[SessionSummary], where: str) -> None:
    """Piped (a file, grep, less): one row per session at whatever width it needs, the
    header row included; on a terminal, long titles fold within its width."""
    piped = not console.is_terminal
    fold: Any = None if piped else "fold"
    if piped:
        console.print(f"Sessions in {escape(where)}", soft_wrap=True)
    table = Table(
        title=None if piped else f"Sessions in {escape(where)}",
        title_justify="left",
        box=box.SIMPLE_HEAD if piped else box.HEAVY_HEAD,
        pad_edge=not piped,
        show_edge=not piped,
    )
    table.add_column("session", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("progress", no_wrap=True, justify="right")
    table.add_column("title", overflow=fold, no_wrap=piped)
    table.add_column("workflow", overflow=fold, no_wrap=piped)
    table.add_column("active", no_wrap=True)
    for s in summaries:
        table.add_row(
            s.session_id,
            _status(s),
            _progress(s),
            escape(s.display_title),
            escape(s.workflow_id or "-"),
            _ago(s.last_activity),
        )
    if piped:
        print_whole(console, table, widest=True)
    else:
        console.print(table)


# --- show --------------------------------------------------------------------------------


def run_show(cli: Cli) -> int:
    engine = cli.engine()
    session_id: str = _engine_result(cli, engine.resolve_session(cli.args.session_id))
    view = engine.session_view(session_id)
    summary = engine.session_summary(session_id)
    if not isinstance(summary, Failure) and view.is_healthy:
        view.take_statuses(summary.unwrap())
    if cli.as_json:
        cli.print_json(view.to_json())
    else:
        console = cli.console()
        if view.prefix_only:
            console.print(f"[bold yellow]{UNHEALTHY_BANNER}[/]")
        print_whole(console, session_tree(view))
    # Non-zero so scripts notice the damage even though the session could be shown.
    return 0 if view.is_healthy else 1


# --- lifecycle ---------------------------------------------------------------------------


def _report_change(cli: Cli, change: LifecycleChange, verb: str, same: str) -> int:
    if cli.as_json:
        cli.print_json({"ok": not change.busy, **change.to_json()})
    else:
        console = cli.console()
        for sid in change.changed:
            console.print(f"{verb} {sid}", soft_wrap=True)
        for sid in change.unchanged:
            console.print(f"{sid} was already {same}", soft_wrap=True)
        for sid in change.busy:
            console.print(
                f"[yellow]{sid} is being written right now; left as it was, try again[/]",
                soft_wrap=True,
            )
    return 1 if change.busy else 0


def run_archive(cli: Cli) -> int:
    change = _engine_result(cli, cli.engine().archive(list(cli.args.session_ids)))
    return _report_change(cli, change, "Archived", "archived")


def run_unarchive(cli: Cli) -> int:
    change = _engine_result(cli, cli.engine().unarchive(list(cli.args.session_ids)))
    return _report_change(cli, change, "Unarchived", "not archived")


def _confirm(cli: Cli, question: str) -> bool:
    stdin = getattr(cli, "stdin", None) or sys.stdin
    if not stdin.isatty():
        raise CliExit(
            envelope(
                "VALIDATION_ERROR",
                "Deleting needs a yes: there is no terminal to ask on; nothing was deleted.",
                "Add --yes to delete without asking.",
            )
        )
    cli.err.write(f"{question} [y/N] ")
    cli.err.flush()
    return stdin.readline().strip().lower() in ("y", "yes")


def run_delete(cli: Cli) -> int:
    engine = cli.engine()
    ids = [_engine_result(cli, engine.resolve_session(text)) for text in cli.args.session_ids]
    if not cli.args.yes:
        listed = "\n".join(f"  {sid}" for sid in ids)
        if not _confirm(cli, f"Delete {counted(len(ids), 'session')} for good?\n{listed}\n"):
            cli.err.write("Nothing was deleted.\n")
            return 1
    change = _engine_result(cli, engine.delete_sessions(ids))
    return _report_change(cli, change, "Deleted", "gone")


def run_prune(cli: Cli) -> int:
    args = cli.args
    if args.older_than is None:
        raise CliExit(
            envelope(
                "VALIDATION_ERROR",
                "prune deletes sessions by age and refuses to guess one; nothing was deleted.",
                "Add --older-than, e.g. --older-than 30d (and --dry-run to see what it would do).",
            )
        )
    request = PruneRequest(
        older_than=parse_duration(args.older_than, "--older-than"),
        statuses=tuple(args.status or ()),
        dry_run=args.dry_run,
    )
    report = _engine_result(cli, cli.engine().prune(request))
    if cli.as_json:
        cli.print_json(report.to_json())
        return 1 if report.busy else 0
    console = cli.console()
    doing = "Would delete" if report.dry_run else "Deleted"
    deleted = [s.session_id for s in report.selected] if report.dry_run else report.deleted
    listed = ":" if deleted else "."
    console.print(
        f"{doing} {counted(len(deleted), 'session')} older than {args.older_than}{listed}"
    )
    for sid in deleted:
        console.print(f"  {sid}", soft_wrap=True)
    for sid in report.busy:
        console.print(f"[yellow]  {sid} is being written; kept[/]", soft_wrap=True)
    if report.active:
        were = "was" if len(report.active) == 1 else "were"
        console.print(
            f"Kept {counted(len(report.active), 'session')} that {were} active during the"
            " prune (written after it listed them):"
        )
        for sid in report.active:
            console.print(f"  {sid}", soft_wrap=True)
    collected = report.collected
    if collected.skipped_reason:
        console.print(f"[yellow]Collected nothing: {escape(collected.skipped_reason)}[/]")
    else:
        verb = "Would collect" if report.dry_run else "Collected"
        console.print(
            f"{verb} {counted(len(collected.snapshots), 'snapshot')} and "
            f"{counted(len(collected.pinned_workflows), 'pinned workflow')} no kept session "
            "uses."
        )
    if report.dry_run:
        console.print("Nothing was changed (--dry-run).", style="dim")
    if report.busy:
        console.print(
            "Next: run the same command again once those sessions are no longer being written.",
            soft_wrap=True,
        )
    return 1 if report.busy else 0


def run_reindex(cli: Cli) -> int:
    count = cli.backend().query.rebuild()
    if isinstance(count, Failure):
        raise CliExit(envelope("INTERNAL_ERROR", count.failure().message))
    if cli.as_json:
        cli.print_json({"ok": True, "sessions": count.unwrap()})
    else:
        cli.console().print(f"Rebuilt the session index: {counted(count.unwrap(), 'session')}.")
    return 0


# --- events ------------------------------------------------------------------------------


def _event_line(event: Any) -> str:
    scope = event.scope
    where = "" if scope is None else " ".join(x for x in (scope.runId, scope.nodeId) if x)
    return f"{event.eventIndex:>6}  {event.kind:<24} {where}".rstrip()


def run_events(cli: Cli) -> int:
    """The events from --since on; at most --limit of them (then where the rest starts, on
    stderr), or every one, and with --follow each new one as it is appended."""
    args = cli.args
    cursor = parse_count(args.since, "--since") if args.since is not None else 0
    left = None if args.limit is None else parse_count(args.limit, "--limit", low=1)
    engine = cli.engine()
    session_id: str = _engine_result(cli, engine.resolve_session(args.session_id))
    feed = None
    if args.follow:
        feed = _engine_result(cli, engine.watch([session_id]))
    try:
        while left is None or left > 0:
            want = EVENTS_READ if left is None else min(left, EVENTS_READ)
            page = _engine_result(cli, engine.events_since(session_id, cursor, want))
            for event in page.events:
                if cli.as_json:
                    cli.out.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
                else:
                    cli.write_line(_event_line(event))
            cli.out.flush()
            cursor = page.next_cursor
            if left is not None:
                left -= len(page.events)
                if left == 0 and page.at_end and feed is None:
                    return 0
            if not page.at_end:
                continue
            if feed is None:
                return 0
            feed.wait(FOLLOW_POLL)
        # --limit reached with events left (--follow ends here too: it printed N)
        cli.err.write(f"More events: add --since {cursor} for the next ones.\n")
        return 0
    finally:
        if feed is not None:
            feed.close()


# --- wiring ------------------------------------------------------------------------------


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    found: list[str] = []
    for action in parser._actions:
        found.extend(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_option_strings(sub))
    return found


def unknown_arguments(
    parser: argparse.ArgumentParser,
    extras: list[str],
    problem: str | None = None,
    command: str = "workrail sessions",
) -> dict[str, Any]:
    """VALIDATION_ERROR for flags or words `workrail sessions` does not know (or another
    argparse `problem`) in `command` (the subcommand that met it), with the closest
    known flag; nothing has run."""
    known = sorted(set(_option_strings(parser)) | set(SUBCOMMANDS))
    unknown = [t for t in extras if t.startswith("-") and t.split("=", 1)[0] not in known]
    name = (unknown or extras or [""])[0].split("=", 1)[0]
    if problem is not None and not unknown:
        choice = re.search(r"invalid choice: '([^']*)'", problem)
        name = choice.group(1) if choice else ""
    close = did_you_mean(name, known, cutoff=0.6) if name else None
    hint = f"Did you mean {close}? " if close else ""
    what = (
        f"Unknown {'argument' if len(unknown) == 1 else 'arguments'} for {command}: "
        f"{' '.join(unknown)}"
        if unknown or problem is None
        else f"{command}: {problem}"
    )
    return envelope(
        "VALIDATION_ERROR",
        f"{what}; nothing was done.",
        hint + f"See `{command} --help`.",
        details={"didYouMean": close},
    )


def _friendly(parser: argparse.ArgumentParser, root: argparse.ArgumentParser) -> None:
    """Parse errors of the sessions commands become our envelope (exit 2) instead of
    argparse's usage text."""

    def error(message: str) -> Any:
        argv = list(getattr(root, "workrail_argv", None) or sys.argv[1:])
        raise CliExit(unknown_arguments(root, argv, message, parser.prog))

    parser.error = error  # type: ignore[method-assign]


def run_sessions(cli: Cli) -> int:
    handler = {
        "show": run_show,
        "archive": run_archive,
        "unarchive": run_unarchive,
        "delete": run_delete,
        "prune": run_prune,
        "events": run_events,
        "reindex": run_reindex,
    }.get(getattr(cli.args, "sessions_command", None) or "", run_list)
    return handler(cli)


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    sessions = add_command(subparsers, common, "sessions", LIST_HELP, LIST_DESCRIPTION)
    _status_flag(sessions, " (pending works too)")
    sessions.add_argument("--workflow", metavar="ID", help="only runs of this workflow id")
    sessions.add_argument("--search", metavar="TEXT", help="every word in the title or notes")
    sessions.add_argument("--workspace", metavar="PATH", help="only sessions of this workspace")
    sessions.add_argument("--branch", metavar="NAME", help="only sessions on this git branch")
    sessions.add_argument("--since", metavar="AGE|DATE", help="active since (7d, 2026-01-31)")
    sessions.add_argument("--limit", default=str(DEFAULT_LIMIT), metavar="N", help="page size")
    sessions.add_argument("--cursor", metavar="CURSOR", help="the next page, as printed")
    sessions.add_argument("--all", action="store_true", help="include archived sessions")
    nested = sessions.add_subparsers(dest="sessions_command", metavar="COMMAND")
    _register_subcommands(nested, common)
    sessions.set_defaults(handler=run_sessions)
    _friendly(sessions, sessions)
    for sub in nested.choices.values():
        _friendly(sub, sessions)


def _status_flag(parser: argparse.ArgumentParser, more: str = "") -> None:
    parser.add_argument(
        "--status",
        action="append",
        metavar="STATUS",
        help=f"only this status (repeatable): {', '.join(RUN_STATUSES)}{more}",
    )


def _register_subcommands(nested: Any, common: argparse.ArgumentParser) -> None:
    show = add_command(nested, common, "show", "print a session's run DAG as a tree")
    show.add_argument("session_id", metavar="SESSION")
    for name, text in (
        ("archive", "leave default lists and resume_session (kept, can be unarchived)"),
        ("unarchive", "bring archived sessions back"),
        ("delete", "delete sessions for good"),
    ):
        cmd = add_command(nested, common, name, text)
        cmd.add_argument("session_ids", metavar="SESSION", nargs="+")
        if name == "delete":
            cmd.add_argument("--yes", action="store_true", help="do not ask")
    prune = add_command(
        nested, common, "prune", "delete old sessions, then collect content no kept session uses"
    )
    prune.add_argument("--older-than", metavar="AGE", help="required: e.g. 30d, 12h, 2w")
    _status_flag(prune)
    prune.add_argument("--dry-run", action="store_true", help="say what would go; change nothing")
    events = add_command(
        nested, common, "events", "print a session's events (JSON lines with --json)"
    )
    events.add_argument("session_id", metavar="SESSION")
    events.add_argument("--since", metavar="N", help="start at eventIndex N (default 0)")
    events.add_argument("--limit", metavar="N", help="print at most N events (default: all)")
    events.add_argument("--follow", action="store_true", help="keep printing new events")
    add_command(nested, common, "reindex", "rebuild the session index from the logs")
