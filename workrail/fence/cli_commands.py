"""`workrail fence pause|resume|status`: the operator switch for the checkpoint tool.

The pause flag lives in the backend itself, so pausing from this command stops a running
server in another process (or on another machine sharing Valkey/Redis) on its next request.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workrail.fence.backend import BackendUnavailable
from workrail.fence.service import open_fence_service
from workrail.store.local.layout import DATA_DIR_ENV, default_data_dir


def add_subcommands(subparsers: Any) -> argparse.ArgumentParser:
    """Add `fence` (with pause, resume, status) to a `workrail` subparsers object."""
    fence: argparse.ArgumentParser = subparsers.add_parser(
        "fence", help="Operate the effect checkpoint tool (pause, resume, status)."
    )
    fence.add_argument(
        "--data-dir", type=Path, default=None, help=f"Data directory (default ${DATA_DIR_ENV})."
    )
    fence.add_argument("--json", action="store_true", help="Print JSON for machines.")
    commands = fence.add_subparsers(dest="fence_command", metavar="FENCE_COMMAND", required=True)
    commands.add_parser("pause", help="Refuse every checkpoint request with TOOL_PAUSED.")
    commands.add_parser("resume", help="Serve checkpoint requests again.")
    commands.add_parser("status", help="Show the backend, pause switch and request budgets.")
    fence.set_defaults(handler=run_fence_command)
    return fence


def run_fence_command(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    """Execute a parsed `fence` command; returns the process exit code."""
    environ = os.environ if env is None else env
    data_dir = args.data_dir or default_data_dir(dict(environ))
    try:
        service = open_fence_service(data_dir, environ)
    except (BackendUnavailable, ValueError, OSError) as exc:
        print(f"workrail fence: {exc}", file=sys.stderr)
        return 2
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
        print(f"workrail fence: {exc}", file=sys.stderr)
        return 3
    finally:
        service.close()
    if args.json:
        print(json.dumps(report))
    else:
        state = "paused" if report["paused"] else "serving"
        print(
            f"effect checkpoint: {state} (backend {report['backend']}, budgets"
            f" {report['client_requests_per_minute']}/min per client,"
            f" {report['global_requests_per_minute']}/min global; 0 = unlimited)"
        )
    return 0
