"""The bundled library served the way `workrail mcp` serves it, in a fresh data directory."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
