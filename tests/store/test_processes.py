"""Crash injection and multi-process contention against real files and real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.store.contract import append, events_of
from tests.store.plans import advance_plan, new_id, start_plan
from workrail.store.local.backend import LocalBackend

ROOT = Path(__file__).resolve().parents[2]
STEPS = ["after_temp_write", "after_rename", "manifest_partial", "after_manifest"]


def _child(module: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("kill_at", [0, 2])
def test_sigkill_at_each_append_step_loses_nothing_acknowledged(
    data_dir: Path, step: str, kill_at: int
) -> None:
    proc = _child("tests.store.crash_child", str(data_dir), step, str(kill_at))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err
    lines = out.split()
    sess = lines[1]
    acked = [int(x) for x in lines[3::2]]
    assert len(acked) == kill_at

    store = LocalBackend.open(data_dir).sessions
    assert store.health(sess).unwrap().kind in ("healthy",)
    events = events_of(store, sess)
    if acked:
        assert len(events) >= acked[-1] + 1
    assert [e.eventIndex for e in events] == list(range(len(events)))
    if step == "after_manifest":
        # written and fsync'd, just not acknowledged: it is durable
        assert len(events) == (acked[-1] + 1 if acked else 0) + 3
    else:
        assert len(events) == (acked[-1] + 1 if acked else 0)

    # the session accepts the next append, and stays healthy for a fresh reader
    if events:
        run = next(iter(store.read(sess, lambda log: list(log.index.runs)).unwrap()))
        tip = store.read(sess, lambda log: log.index.preferred_tip(run)).unwrap()
        assert tip is not None
        plan = advance_plan(sess, run, len(events), tip, new_id("node"), new_id("attempt"))
    else:
        plan = start_plan(sess, new_id("run"), new_id("node"))
    assert append(store, sess, plan).unwrap().deduplicated is False
    fresh = LocalBackend.open(data_dir).sessions
    assert fresh.health(sess).unwrap().kind == "healthy"
    assert len(events_of(fresh, sess)) == len(events) + len(plan.events)


@pytest.mark.slow
def test_concurrent_processes_append_contiguously(data_dir: Path) -> None:
    store = LocalBackend.open(data_dir).sessions
    sess, run, root = new_id("sess"), new_id("run"), new_id("node")
    append(store, sess, start_plan(sess, run, root))
    workers, rounds = 4, 12
    procs = [
        _child("tests.store.contend_child", str(data_dir), sess, str(rounds))
        for _ in range(workers)
    ]
    for proc in procs:  # wait until every contender is up, then start them together
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("GO\n")
        proc.stdin.flush()
    locked = 0
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, out + err
        fields = dict(line.split() for line in out.strip().splitlines())
        assert int(fields["DONE"]) == rounds
        locked += int(fields["LOCKED"])
    assert locked > 0, "contenders never collided"
    events = events_of(LocalBackend.open(data_dir).sessions, sess)
    assert len(events) == 3 + workers * rounds * 3
    assert [e.eventIndex for e in events] == list(range(len(events)))
    assert len({e.dedupeKey for e in events}) == len(events)
    assert LocalBackend.open(data_dir).sessions.health(sess).unwrap().kind == "healthy"
