"""Latency benchmark (scripts/bench_mcp): a real stdio client drives `workrail mcp` through
start → 10 advances → checkpoint → rehydrate, N times, and reports median / p95 per tool.

A `tools/call` of an unknown tool is measured too (answered by the SDK without touching the
engine), so the protocol's own cost can be told apart from WorkRail's (engine + fsync'd store).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from rich.console import Console
from rich.table import Table

ADVANCES = 10
WORKFLOW: dict[str, Any] = {
    "id": "bench-flow",
    "name": "Bench Flow",
    "version": "1.0.0",
    "description": "A linear workflow long enough for ten advances.",
    "steps": [
        {"id": f"step-{i}", "title": f"Step {i}", "prompt": f"Do step {i}."}
        for i in range(ADVANCES + 2)
    ],
}


async def _timed(
    samples: dict[str, list[float]], label: str, client: Client, tool: str, args: dict[str, Any]
) -> dict[str, Any]:
    started = time.perf_counter()
    result = await client.call_tool(tool, args)
    samples.setdefault(label, []).append((time.perf_counter() - started) * 1000)
    if result.is_error and not label.startswith("baseline"):
        raise RuntimeError(f"{label} failed: {result.content}")
    return dict(result.structured_content or {})


async def _run(params: StdioServerParameters, iterations: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {}
    async with Client(params) as client:
        for _ in range(iterations):
            await _timed(samples, "baseline (unknown tool)", client, "none", {})
            body = await _timed(
                samples, "start_workflow", client, "start_workflow", {"workflowId": "bench-flow"}
            )
            for n in range(ADVANCES):
                args = {**body["nextCall"]["params"], "output": {"notesMarkdown": f"did {n}"}}
                body = await _timed(
                    samples, "continue_workflow(advance)", client, "continue_workflow", args
                )
            token = {"checkpointToken": body["checkpointToken"]}
            await _timed(samples, "checkpoint_workflow", client, "checkpoint_workflow", token)
            rehydrate = {"intent": "rehydrate", "stateToken": body["stateToken"]}
            await _timed(
                samples, "continue_workflow(rehydrate)", client, "continue_workflow", rehydrate
            )
    return samples


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_mcp", description=__doc__)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--store", default=None, help="a postgresql:// URL for the server's sessions (default: files)"
    )
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="workrail-bench-"))
    try:
        workflows = root / "workflows"
        workflows.mkdir()
        (workflows / "bench-flow.json").write_text(json.dumps(WORKFLOW), encoding="utf-8")
        env = {
            **os.environ,
            "WORKRAIL_DATA_DIR": str(root / "data"),
            "WORKFLOW_STORAGE_PATH": str(workflows),
            "WORKFLOW_INCLUDE_USER": "false",
            "WORKFLOW_INCLUDE_PROJECT": "false",
            "WORKRAIL_LOG_LEVEL": "WARNING",
            **({"WORKRAIL_STORE_URL": args.store} if args.store else {}),
        }
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "workrail", "mcp"], env=env
        )
        samples = anyio.run(_run, params, args.iterations)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    rows = {
        name: {
            "n": len(values),
            "medianMs": round(statistics.median(values), 2),
            "p95Ms": round(_p95(values), 2),
        }
        for name, values in samples.items()
    }
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    where = "PostgreSQL" if args.store else "files"
    table = Table(title=f"workrail mcp over stdio ({where}), {args.iterations} iterations")
    for column in ("call", "n", "median ms", "p95 ms"):
        table.add_column(column, justify="right" if column != "call" else "left")
    for name, row in rows.items():
        table.add_row(name, str(row["n"]), f"{row['medianMs']:.2f}", f"{row['p95Ms']:.2f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
