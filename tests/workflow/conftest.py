"""Fixtures for the workflow tests: the reference-written data checked into tests/fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REFERENCE

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spec_fixtures() -> Path:
    return REFERENCE
