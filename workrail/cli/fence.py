"""`workrail fence pause|resume|status`: the operator switch for the checkpoint tool.

The pause flag lives in the backend itself, so pausing from this command stops a running
server in another process (or on another machine sharing Valkey/Redis) on its next request.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from returns.result import Failure

from workrail.app import open_fence
from workrail.cli.context import Cli, add_command
from workrail.core.errors import envelope
from workrail.fence.backend import BackendUnavailable


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add `fence` (with pause, resume, status) to a `workrail` subparsers object."""
    fence: argparse.ArgumentParser = add_command(
        subparsers, common, "fence", "Operate the effect checkpoint tool (pause, resume, status)."
    )
    commands = fence.add_subparsers(dest="fence_command", metavar="FENCE_COMMAND", required=True)
    add_command(commands, common, "pause", "Refuse every checkpoint request with TOOL_PAUSED.")
    add_command(commands, common, "resume", "Serve checkpoint requests again.")
    add_command(commands, common, "status", "Show the backend, pause switch and request budgets.")
    fence.set_defaults(handler=run_fence_command)


def run_fence_command(cli: Cli) -> int:
    """Execute a parsed `fence` command; returns the process exit code."""
    args = cli.args
    opened = open_fence(cli.config)
    if isinstance(opened, Failure):
        problem = opened.failure()
        return cli.fail(envelope(problem.code, problem.message))
    service = opened.unwrap()
    try:
        if args.fence_command == "pause":
            service.pause()
        elif args.fence_command == "resume":
            service.resume()
        report = {
            "backend": service.backend.name,
            "paused": service.backend.is_paused(),
            "client_requests_per_minute": service.limits.client_rpm,
            "global_requests_per_minute": service.limits.global_rpm,
        }
    except BackendUnavailable as exc:
        return cli.fail(
            envelope(
                "DEPENDENCY_UNAVAILABLE",
                f"The checkpoint backend cannot be reached: {exc}",
                "Check that Valkey/Redis at WORKRAIL_FENCE_URL is running, then run the "
                "command again.",
            )
        )
    finally:
        service.close()
    if cli.as_json:
        print(json.dumps(report), file=cli.out)
    else:
        state = "paused" if report["paused"] else "serving"
        print(
            f"effect checkpoint: {state} (backend {report['backend']}, budgets"
            f" {report['client_requests_per_minute']}/min per client,"
            f" {report['global_requests_per_minute']}/min global; 0 = unlimited)",
            file=cli.out,
        )
    return 0
