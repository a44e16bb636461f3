"""Fixtures for the workflow tests: the reference's fixture directory when present."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _find_spec_fixtures() -> Path | None:
    bundled_copy = Path(__file__).resolve().parent / "reference_fixtures"
    if bundled_copy.is_dir():
        return bundled_copy
    for base in (REPO_ROOT, *REPO_ROOT.parents):
        candidate = base / "shared" / "spec" / "fixtures"
        if candidate.is_dir():
            return candidate
    return None


@pytest.fixture(scope="session")
def spec_fixtures() -> Path:
    found = _find_spec_fixtures()
    if found is None:
        pytest.skip("reference fixtures (shared/spec/fixtures) are not available")
    return found
