"""`workrail export` and `workrail import`: thin handlers over the engine's
`export_session` and `import_session`, on whichever store the configuration names. An import prints a summary
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
from typing import Any, Final

from returns.result import Failure

from workrail import __version__
from workrail.cli.context import Cli, add_command
from workrail.core.text import screen_safe
from workrail.core.wording import counted
from workrail.engine.api import (
    BundleError,
    Engine,
    EngineError,
    Exported,
    Imported,
    ValidatedBundle,
    bundle_envelope,
    read_bundle_file,
    validate_bundle,
)

WRITE_HINT: Final = (
    "Check that the folder of the output file exists and is writable, or leave out -o to "
    "write the bundle to stdout."
)
READ_HINT: Final = "Check the file's path, or pass - to read the bundle from stdin."
INVALID_HINT: Final = (
    "Import the file exactly as `workrail export SESSION -o FILE` wrote it; if it was "
    "changed or cut short, export the session again."
)

COMMANDS: Final = {
    "export": (
        "export a session as a bundle",
        "Write one session's durable truth as a JSON bundle (no tokens).",
    ),
    "import": (
        "import a session bundle",
        "Validate a bundle completely, then store it as a new session.",
    ),
}
"""Each command's line in `workrail --help` and the opening of its own help."""


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Register `export` and `import` on the main parser's subparsers."""
    export = add_command(subparsers, common, "export", *COMMANDS["export"])
    export.add_argument(
        "session_id", metavar="SESSION", help="a session id or a unique start of one"
    )
    export.add_argument(
        "-o", "--output", metavar="FILE", help="write the bundle here (default: stdout)"
    )
    export.set_defaults(handler=run_export)
    imp = add_command(subparsers, common, "import", *COMMANDS["import"])
    imp.add_argument("file", metavar="FILE", help="bundle file, or - for stdin")
    imp.add_argument(
        "--copy",
        action="store_true",
        help="import even when this store already holds the session: a second copy under a new id",
    )
    imp.set_defaults(handler=run_import)


def _envelope(problem: BundleError | EngineError, suggestion: str | None = None) -> dict[str, Any]:
    found = bundle_envelope(problem) if isinstance(problem, BundleError) else problem.to_envelope()
    return found if suggestion is None else with_suggestion(found, suggestion)


def run_export(cli: Cli) -> int:
    """Bundle to `-o FILE` (summary on stdout) or to stdout (summary on stderr); the
    engine names it and stamps it, with its own randomness and clock."""
    args, out = cli.args, cli.out
    engine = cli.engine()
    resolved = engine.resolve_session(args.session_id)  # a unique prefix will do
    if isinstance(resolved, Failure):
        return cli.fail(resolved.failure().to_envelope())
    result = engine.export_session(resolved.unwrap(), app_version=__version__)
    if isinstance(result, Failure):
        return cli.fail(_envelope(result.failure()))
    exported = result.unwrap()
    if args.output:
        try:
            _write_atomically(Path(args.output), exported.data)
        except OSError as exc:
            error = BundleError(
                "EXPORT_BUILD_FAILED",
                f"Cannot write {args.output}: {exc.strerror or exc}",
                args.output,
            )
            return cli.fail(_envelope(error, WRITE_HINT))
    else:
        out.write(exported.data.decode("utf-8") + "\n")
        out.flush()
    _export_summary(cli, exported)
    return 0


def _export_summary(cli: Cli, exported: Exported) -> None:
    """What was exported: on stdout with `-o`, else on stderr (stdout holds the bundle)."""
    output = cli.args.output
    summary_to = cli.out if output else cli.err
    bundle, data = exported.bundle, exported.data
    session, salvage = bundle.session, bundle.salvage
    if cli.as_json:
        payload: dict[str, Any] = {
            "ok": True,
            "sessionId": session.sessionId,
            "bundleId": bundle.bundleId,
            "output": output,
            "bytes": len(data),
            "eventCount": len(session.events),
            "snapshotCount": len(session.snapshots),
            "pinnedWorkflowCount": len(session.pinnedWorkflows),
            "complete": salvage is None,
        }
        if salvage is not None:
            payload["salvage"] = salvage.to_json()
        summary_to.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return
    summary_to.write(
        f"Exported {session.sessionId} to {output or 'stdout'}: "
        f"{counted(len(session.events), 'event')}, "
        f"{counted(len(session.snapshots), 'snapshot')}, "
        f"{counted(len(session.pinnedWorkflows), 'pinned workflow')} "
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


def run_import(cli: Cli, stdin: Any = None) -> int:
    """Print where each run continues, with fresh tokens for each run (`--json`)."""
    args = cli.args
    source = (stdin or sys.stdin.buffer) if args.file == "-" else Path(args.file)
    raw = read_bundle_file(source)
    if isinstance(raw, Failure):
        return cli.fail(_envelope(raw.failure(), READ_HINT))
    validated = validate_bundle(raw.unwrap())  # before the store is opened at all
    if isinstance(validated, Failure):
        return cli.fail(_envelope(validated.failure(), INVALID_HINT))
    engine = cli.engine()
    if not args.copy:
        here = engine.bundle_held_as(validated.unwrap())
        if isinstance(here, Failure):
            return cli.fail(_envelope(here.failure()))
        held = here.unwrap()
        if held is not None:
            return _already_imported(cli, held)
    return _import(cli, engine, validated.unwrap())


def _import(cli: Cli, engine: Engine, validated: ValidatedBundle) -> int:
    result = engine.import_session(validated)
    if isinstance(result, Failure):
        return cli.fail(_envelope(result.failure()))
    done: Imported = result.unwrap()
    imported, out = done.result, cli.out
    if cli.as_json:
        cli.print_json({"ok": True, **imported.to_json(), "tokens": done.tokens})
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
    finished = all(run.get("isComplete") for run in done.tokens["runs"])
    out.write(_next_steps(cli, imported.session_id, finished=finished))
    return 0


def _next_steps(cli: Cli, session_id: str, *, finished: bool = False) -> str:
    """What a person does with an imported session (tokens are for agents: `--json`), on
    the store it was imported into."""
    see = f"See it: {cli.again('sessions', 'show', session_id)}\n"
    if finished:
        return see + "It is complete: nothing is left to continue.\n"
    call = json.dumps({"tool": "resume_session", "params": {"sessionId": session_id}})
    return f"{see}Continue it: an agent calls {call}\n"


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
        "Add --copy to import a second copy under a new session id.\n"
        + _next_steps(cli, session_id)
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
