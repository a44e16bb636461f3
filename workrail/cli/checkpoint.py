"""`workrail checkpoint export|resume`: portable checkpoint records."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from returns.result import Failure
from rich.markup import escape

from workrail.cli.context import Cli, add_command


def run_checkpoint_export(cli: Cli) -> int:
    """The record to stdout, or to -o FILE with a summary on stdout."""
    from workrail.core.canonical import canonical_bytes

    args = cli.args
    exported = cli.engine().export_checkpoint_record(args.token_or_node)
    if isinstance(exported, Failure):
        return cli.fail(exported.failure().to_envelope())
    record = exported.unwrap()
    data = canonical_bytes(record)
    if args.output is None:
        cli.out.write(data.decode("utf-8") + "\n")
        return 0
    try:
        Path(args.output).write_bytes(data)
    except OSError as exc:
        return cli.input_error(
            f"Cannot write {args.output}: {exc.strerror or exc}", "Choose a writable path for -o."
        )
    if cli.as_json:
        cli.print_json({"ok": True, "output": args.output, "record": record})
    else:
        cli.console().print(
            f"Wrote the checkpoint record of {record['workflowId']} "
            f"({len(record['completed'])} completed steps) to {args.output}."
        )
    return 0


def _read_limited(path: str, limit: int) -> bytes:
    """At most `limit` + 1 bytes, so an oversized file is refused without reading it all."""
    with open(path, "rb") as f:
        return f.read(limit + 1)


def run_checkpoint_resume(cli: Cli) -> int:
    """A new session at the record's point; fails closed on any plan or context mismatch."""
    from workrail.engine.api import MAX_RECORD_BYTES

    args = cli.args
    try:
        raw = _read_limited(args.file, MAX_RECORD_BYTES)
    except OSError as exc:
        return cli.input_error(
            f"Cannot read {args.file}: {exc.strerror or exc}",
            "Pass a record file written by `workrail checkpoint export`.",
        )
    context: Any = {}
    if args.context is not None:
        try:
            context = json.loads(_read_limited(args.context, 1024 * 1024))
        except (OSError, ValueError) as exc:
            return cli.input_error(
                f"Cannot read the context from {args.context}: {exc}",
                "Pass a JSON object file with the run's context as it was at the checkpoint.",
            )
    resumed = cli.engine().resume_checkpoint_record(raw, context)
    if isinstance(resumed, Failure):
        return cli.fail(resumed.failure().to_envelope())
    response = resumed.unwrap()
    if cli.as_json:
        cli.print_json(response)
        return 0
    pending = response.get("pending") or {}
    console = cli.console()
    session = response.get("sessionId")
    console.print(
        f"Resumed in a new session{f' {escape(str(session))}' if session else ''}. Pending "
        f"step: [bold]{escape(str(pending.get('stepId')))}[/] "
        f"({escape(str(pending.get('title')))})"
    )
    # continueToken first: the one token an agent needs (the others are the older form).
    for key in ("continueToken", "stateToken", "ackToken", "checkpointToken"):
        if key in response:
            # Tokens are copied by hand: never let the terminal width break one in two.
            console.print(f"  {key}: {response[key]}", markup=False, soft_wrap=True)
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    checkpoint = add_command(
        subparsers,
        common,
        "checkpoint",
        "export or resume portable checkpoint records",
        "A portable checkpoint record holds only the plan fingerprint and progress "
        "(no notes, no tokens, no context values); resuming fails closed unless the workflow "
        "and the context both match.",
    )
    nested = checkpoint.add_subparsers(dest="checkpoint_command", metavar="COMMAND", required=True)
    export = add_command(nested, common, "export", "write the record of a checkpoint or node")
    export.add_argument(
        "token_or_node", metavar="CHECKPOINT_TOKEN_OR_NODE", help="a checkpointToken or node id"
    )
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    export.set_defaults(handler=run_checkpoint_export)
    resume = add_command(nested, common, "resume", "start a new session from a record")
    resume.add_argument("file", metavar="FILE", help="a record from `checkpoint export`")
    resume.add_argument(
        "--context",
        metavar="CONTEXT.json",
        default=None,
        help="the run's context at the checkpoint (default: {})",
    )
    resume.set_defaults(handler=run_checkpoint_resume)
