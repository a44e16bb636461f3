from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# A copy of the data written by the reference implementation (spec fixtures).
REFERENCE = Path(__file__).resolve().parent / "fixtures" / "reference"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def reference_data(tmp_path: Path) -> Path:
    """A writable copy of the reference data directory."""
    target = tmp_path / "refdata"
    shutil.copytree(REFERENCE / "data", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(0o700 if p.is_dir() else 0o600)
    return target
