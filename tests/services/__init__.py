"""The services the test suite needs, and the one rule for a missing one.

Tests use real services (redis-server, PostgreSQL, Chromium), never mocks. When one is not
installed, a test that needs it calls `missing(...)`: under CI (`CI=true`) the test FAILS,
since a green run must mean every test ran; elsewhere it is skipped with a reason that
names the service, and the run ends with one line per missing service and how many tests
did not run (tests/conftest.py). `scripts/ci_services.sh` installs them all.

A module per service lives beside this one when its start-up needs more than a binary.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import NoReturn

import pytest

SKIP_PREFIX = "needs "
"""Every skip for a missing service reads `needs <service>: …` (counted at the end)."""

INSTALL_HINT = "scripts/ci_services.sh installs it"


def under_ci(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}


def missing(
    service: str, detail: str = "it is not installed", install: str = INSTALL_HINT
) -> NoReturn:
    """Stop the test: `service` is not available. Fails under CI, skips elsewhere."""
    reason = f"{SKIP_PREFIX}{service}: {detail} ({install})"
    if under_ci():
        pytest.fail(f"{reason}; under CI every service must be present", pytrace=False)
    pytest.skip(reason)


def require_binary(service: str, binary: str) -> str:
    """The path of `binary` on PATH, or `missing(service)`."""
    found = shutil.which(binary)
    if found is None:
        missing(service, f"{binary} is not on PATH")
    return found
