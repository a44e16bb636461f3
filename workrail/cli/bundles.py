"""`workrail export` and `workrail import`: thin handlers over `export_session` and
`import_bundle`, on whichever store the configuration names. An import prints a summary
and what to do next for a person, and with `--json` fresh tokens for each run, minted by
the engine; the same bundle again is reported as already imported (`--copy` copies)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from returns.result import Failure

from workrail import __version__
from workrail.bundle.errors import BundleError, to_envelope
from workrail.bundle.export import bundle_bytes, export_session, new_bundle_id, utc_now
from workrail.bundle.import_ import already_here, import_validated, read_bundle_file
from workrail.bundle.validate import validate_bytes
from workrail.cli.context import Cli
from workrail.core.text import screen_safe
from workrail.core.wording import counted


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Register `export` and `import` on the main parser's subparsers."""
    export = subparsers.add_parser(
        "export",
        parents=[common],
        help="export a session as a bundle",
        description="Write one session's durable truth as a JSON bundle (no tokens).",
    )
    export.add_argument(
        "session_id", metavar="SESSION", help="a session id or a unique start of one"
    )
    export.add_argument(
        "-o", "--output", metavar="FILE", help="write the bundle here (default: stdout)"
    )
    export.set_defaults(handler=run_export)

    imp = subparsers.add_parser(
        "import",
        parents=[common],
        help="import a session bundle",
        description="Validate a bundle completely, then store it as a new session.",
    )
    imp.add_argument("file", metavar="FILE", help="bundle file, or - for stdin")
    imp.add_argument(
        "--copy",
        action="store_true",
        help="import even when this store already holds the session: a second copy under a new id",
    )
    imp.set_defaults(handler=run_import)


def run_export(cli: Cli) -> int:
    """Bundle to `-o FILE` (summary on stdout) or to stdout (summary on stderr)."""
    args, out, err = cli.args, cli.out, cli.err
    resolved = cli.engine().resolve_session(args.session_id)  # a unique prefix will do
    if isinstance(resolved, Failure):
        return cli.fail(resolved.failure().to_envelope())
    result = export_session(
        cli.backend(),
        resolved.unwrap(),
        bundle_id=new_bundle_id(),
        exported_at=utc_now(),
        app_version=__version__,
    )
    summary_to = out if args.output else err
    if isinstance(result, Failure):
        return cli.fail(to_envelope(result.failure()))
    bundle = result.unwrap()
    data = bundle_bytes(bundle)
    if args.output:
        try:
            _write_atomically(Path(args.output), data)
        except OSError as exc:
            error = BundleError(
                "EXPORT_BUILD_FAILED",
                f"Cannot write {args.output}: {exc.strerror or exc}",
                args.output,
            )
            return cli.fail(
                with_suggestion(
                    to_envelope(error),
                    "Check that the folder of the output file exists and is writable, or "
                    "leave out -o to write the bundle to stdout.",
                )
            )
    else:
        out.write(data.decode("utf-8") + "\n")
        out.flush()
    salvage = bundle.salvage
    if cli.as_json:
        payload: dict[str, Any] = {
            "ok": True,
            "sessionId": bundle.session.sessionId,
            "bundleId": bundle.bundleId,
            "output": args.output,
            "bytes": len(data),
            "eventCount": len(bundle.session.events),
            "snapshotCount": len(bundle.session.snapshots),
            "pinnedWorkflowCount": len(bundle.session.pinnedWorkflows),
            "complete": salvage is None,
        }
        if salvage is not None:
            payload["salvage"] = salvage.to_json()
        summary_to.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        where = args.output or "stdout"
        summary_to.write(
            f"Exported {bundle.session.sessionId} to {where}: "
            f"{counted(len(bundle.session.events), 'event')}, "
            f"{counted(len(bundle.session.snapshots), 'snapshot')}, "
            f"{counted(len(bundle.session.pinnedWorkflows), 'pinned workflow')} "
            f"({counted(len(data), 'byte')}).\n"
        )
        if salvage is not None:
            summary_to.write(
                screen_safe(
                    "WARNING: the session is corrupt after this point "
                    f"({salvage.reason.code}: {salvage.reason.message}); only its validated "
                    "prefix was exported, and the bundle is marked as a salvage export.\n"
                )
            )
    return 0


def run_import(cli: Cli, stdin: Any = None) -> int:
    """Print where each run continues, with fresh tokens for each run."""
    from workrail.engine.imported import tokens_for_import

    args, out = cli.args, cli.out
    source = (stdin or sys.stdin.buffer) if args.file == "-" else Path(args.file)
    raw = read_bundle_file(source)
    if isinstance(raw, Failure):
        return cli.fail(
            with_suggestion(
                to_envelope(raw.failure()),
                "Check the file's path, or pass - to read the bundle from stdin.",
            )
        )
    validated = validate_bytes(raw.unwrap())  # before the store is touched at all
    if isinstance(validated, Failure):
        return cli.fail(
            with_suggestion(
                to_envelope(validated.failure()),
                "Import the file exactly as `workrail export SESSION -o FILE` wrote it; "
                "if it was changed or cut short, export the session again.",
            )
        )
    engine = cli.engine()
    if not args.copy:
        here = already_here(cli.backend(), validated.unwrap())
        if isinstance(here, Failure):
            return cli.fail(to_envelope(here.failure()))
        held = here.unwrap()
        if held is not None:
            return _already_imported(cli, held)
    mint = engine.deps.mint
    result = import_validated(
        cli.backend(), validated.unwrap(), mint_session_id=lambda: mint("sess")
    )
    if isinstance(result, Failure):
        return cli.fail(to_envelope(result.failure()))
    imported = result.unwrap()
    if cli.as_json:
        tokens: dict[str, Any] | None = tokens_for_import(engine, imported)
        payload: dict[str, Any] = {"ok": True, **imported.to_json()}
        if tokens is not None:
            payload["tokens"] = tokens
        out.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return 0
    how = (
        f" (renamed from {imported.original_session_id}: that id already exists here)"
        if imported.renamed
        else ""
    )
    out.write(
        f"Imported session {imported.session_id}{how}: "
        f"{counted(imported.event_count, 'event')}, "
        f"{counted(imported.snapshot_count, 'snapshot')}, "
        f"{counted(imported.pinned_workflow_count, 'pinned workflow')}.\n"
    )
    if imported.salvage is not None:
        out.write(
            "NOTE: the bundle is a salvage export; it holds only the validated prefix of a "
            "damaged session.\n"
        )
    for run in imported.runs:
        out.write(
            f"  run {run.run_id}: continue at node {run.preferred_tip_node_id} "
            f"(workflow {run.workflow_hash})\n"
        )
    out.write(_next_steps(imported.session_id))
    return 0


def _next_steps(session_id: str) -> str:
    """What a person does with an imported session (tokens are for agents: `--json`)."""
    call = json.dumps({"tool": "resume_session", "params": {"sessionId": session_id}})
    return f"See it: workrail sessions show {session_id}\nContinue it: an agent calls {call}\n"


def _already_imported(cli: Cli, session_id: str) -> int:
    """The same bundle again: nothing is written; `--copy` makes a second copy."""
    if cli.as_json:
        cli.print_json(
            {
                "ok": True,
                "imported": False,
                "alreadyImportedAs": session_id,
                "suggestion": "Add --copy to import a second copy under a new session id.",
            }
        )
        return 0
    cli.out.write(
        f"This bundle is already imported as {session_id}; nothing was written. "
        "Add --copy to import a second copy under a new session id.\n" + _next_steps(session_id)
    )
    return 0


def with_suggestion(error: dict[str, Any], suggestion: str) -> dict[str, Any]:
    """The envelope with advice for a person at a terminal, where the catalogue's default
    speaks to an agent sending the bundle as a tool argument."""
    return {**error, "details": {**error.get("details", {}), "suggestion": suggestion}}


def _write_atomically(path: Path, data: bytes) -> None:
    """A half-written bundle would fail integrity anyway; this keeps the old file intact."""
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
