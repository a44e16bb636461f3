"""Several processes creating the same files at once: the keyring on first use and the
same content-addressed values (every start of one workflow writes the same pinned
workflow and initial snapshot)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from workrail.store.local.keyring import load_or_create_keyring

ROOT = Path(__file__).resolve().parents[2]


def _run_all(args: list[list[str]]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.race_child", *a],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for a in args
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    return outputs


def test_racing_first_use_yields_one_keyring(tmp_path: Path) -> None:
    """Six processes make the keyring at once, three times over: each ends up with the one
    on disk (read back here, as any later process would)."""
    for round_ in range(3):
        data = tmp_path / f"d{round_}"
        keys = _run_all([["keyring", str(data)] for _ in range(6)])
        on_disk = load_or_create_keyring(data).current.hex()
        assert set(keys) == {on_disk}


def test_racing_puts_of_the_same_content_never_fail(tmp_path: Path) -> None:
    outputs = _run_all([["cas", str(tmp_path), "150"] for _ in range(5)])
    assert outputs == ["BAD 0"] * 5
    leftovers = [p.name for p in (tmp_path / "snapshots").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
