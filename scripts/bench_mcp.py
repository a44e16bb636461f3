"""Latency benchmark (run through scripts/bench_mcp): the SDK's client drives a real
`workrail mcp` process through start → 10 advances → checkpoint → rehydrate, N times per
run, over stdio (WorkRail's transport and the SDK's, `--stdio sdk`) and over Streamable
HTTP, and reports median / p95 per tool and transport, then each per-call target of the
speed issue.

A `tools/call` of an unknown tool is measured too (answered without touching the engine),
so the protocol's own cost can be told apart from WorkRail's (engine + fsync'd store).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
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


STDIO_TARGETS_MS = {
    "continue_workflow(advance)": 3.0,
    "checkpoint_workflow": 1.7,
    "start_workflow": 3.7,
    "continue_workflow(rehydrate)": 1.2,
}
"""The speed issue's per-call targets over WorkRail's stdio transport (medians)."""


async def _run(target: StdioServerParameters | str, iterations: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {}
    async with Client(target) as client:
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


TRANSPORTS = ("stdio", "stdio-sdk", "http")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_accepting(proc: subprocess.Popen[bytes], port: int) -> None:
    for _ in range(600):  # bounded: 600 short connect attempts
        if proc.poll() is not None:
            raise RuntimeError("the HTTP server exited")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return
        except OSError:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.1)
    raise RuntimeError("the HTTP server never accepted connections")


def _measure(transport: str, env: dict[str, str], iterations: int) -> dict[str, list[float]]:
    command = [sys.executable, "-m", "workrail", "mcp"]
    if transport != "http":
        stdio = "sdk" if transport == "stdio-sdk" else "workrail"
        params = StdioServerParameters(
            command=command[0], args=[*command[1:], "--stdio", stdio], env=env
        )
        return anyio.run(_run, params, iterations)
    port = _free_port()
    proc = subprocess.Popen(
        [*command, "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_accepting(proc, port)
        return anyio.run(_run, f"http://127.0.0.1:{port}/mcp", iterations)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench_mcp", description=__doc__)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--transport", choices=TRANSPORTS, action="append")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument(
        "--store",
        default=None,
        help="a postgresql:// URL for the server's sessions (default: files)",
    )
    args = parser.parse_args(argv)
    transports = args.transport or list(TRANSPORTS)

    runs: list[dict[str, dict[str, dict[str, float]]]] = []
    for _ in range(args.runs):
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
            run = {}
            for transport in transports:
                samples = _measure(transport, env, args.iterations)
                run[transport] = {
                    name: {
                        "n": len(values),
                        "medianMs": round(statistics.median(values), 2),
                        "p95Ms": round(_p95(values), 2),
                    }
                    for name, values in samples.items()
                }
            runs.append(run)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    if args.json:
        print(json.dumps(runs, indent=2))
        return 0
    where = "PostgreSQL" if args.store else "files"
    console = Console()
    for i, run in enumerate(runs, 1):
        for transport, rows in run.items():
            table = Table(title=f"run {i}: {transport} ({where}), {args.iterations} iterations")
            for column in ("call", "n", "median ms", "p95 ms"):
                table.add_column(column, justify="right" if column != "call" else "left")
            for name, row in rows.items():
                table.add_row(name, str(row["n"]), f"{row['medianMs']:.2f}", f"{row['p95Ms']:.2f}")
            console.print(table)

    def med(transport: str, call: str, key: str = "medianMs") -> float:
        return statistics.median(run[transport][call][key] for run in runs)

    advance = "continue_workflow(advance)"
    print(f"targets (median over {len(runs)} runs; load average now {os.getloadavg()[0]:.2f}):")
    if "stdio" in transports:
        for call, limit in STDIO_TARGETS_MS.items():
            value = med("stdio", call)
            print(
                f"  {call + ' over stdio':<40} ≤ {limit:.1f} ms  {value:7.2f} ms "
                f"(p95 {med('stdio', call, 'p95Ms'):.2f})  {'met' if value <= limit else 'NOT met'}"
            )
    if "stdio-sdk" in transports:
        print(f"  the same with the SDK's stdio ...... {med('stdio-sdk', advance):.2f} ms")
    if "http" in transports and "stdio" in transports:
        ratio = med("http", advance) / med("stdio", advance)
        print(
            f"  advance over HTTP ≤ 1.5× stdio ..... {med('http', advance):.2f} ms = "
            f"{ratio:.2f}×  {'met' if ratio <= 1.5 else 'NOT met'}"
        )
    baseline = "baseline (unknown tool)"
    for transport in transports:
        print(
            f"  protocol floor, {transport:<10} .... {med(transport, baseline):.2f} ms "
            f"(p95 {med(transport, baseline, 'p95Ms'):.2f}; an unknown tool's answer)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
