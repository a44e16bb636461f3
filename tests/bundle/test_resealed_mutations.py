"""Anyone can re-seal a bundle, so integrity proves nothing about meaning: a bundle whose
pinned workflows or snapshots were edited and re-sealed is either refused with a BUNDLE_*
code and the path of what is wrong, writing nothing, or imports as a session every
call on which answers without INTERNAL_ERROR. 400 seeded mutations."""

from __future__ import annotations

import copy
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bundle.helpers import BLOCKED, PROBE, encode, export_doc, rekey
from tests.conftest import REFERENCE
from tests.engine.conftest import make_engine, memory_engine
from workrail.bundle.errors import BUNDLE_CODES
from workrail.engine.api import Engine
from workrail.store.local.backend import LocalBackend

ROOT = Path(__file__).resolve().parents[2]
MUTATIONS = 400
REPLACEMENTS: list[Any] = [None, True, False, 0, -1, 2**40, 1.5, "", "x", [], {}, [1], {"a": 1}]


def _engine_session(data_dir: Path, workflow_id: str, advances: int, context: Any) -> str:
    engine = make_engine(data_dir, ROOT / "tests" / "fixtures" / "legacy_workflows")
    answer = engine.start_workflow(workflow_id, context).unwrap()
    notes = "Done, with evidence: ran the checks, all green; test added; approve." * 3
    for _ in range(advances):
        call = answer.get("nextCall")
        if call is None:
            break
        answer = engine.advance(
            call["params"]["stateToken"], call["params"]["ackToken"], notes_markdown=notes
        ).unwrap()
    return engine.deps.codec.parse_state(answer["stateToken"]).unwrap().session_id


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Bundles of the reference sessions and of the former bundled workflows (loops)."""
    data = tmp_path_factory.mktemp("sources") / "data"
    shutil.copytree(REFERENCE / "data", data)
    for path in [data, *data.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
    made = [
        _engine_session(
            data, "code-review", 4, {"reviewAreas": ["api", "tests"], "openBlockingFindings": 0}
        ),
        _engine_session(data, "coding-task", 5, {"planSlices": ["a", "b"], "checksPassed": False}),
        _engine_session(data, "bug-investigation", 4, {"hypotheses": ["h1"], "reproduced": True}),
    ]
    backend = LocalBackend.open(data)
    return [export_doc(backend, sid) for sid in (PROBE, BLOCKED, *made)]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


def _strings(value: Any) -> list[str]:
    return [v for v in _leaves(value) if isinstance(v, str)]


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for child in value.values():
            yield from _leaves(child)
    elif isinstance(value, list):
        for child in value:
            yield from _leaves(child)
    else:
        yield value


def mutate(doc: dict[str, Any], rng: random.Random) -> str:
    """Edit one value inside a snapshot or pinned workflow; return where."""
    session = doc["session"]
    section = rng.choice(["snapshots", "pinnedWorkflows"])
    key = rng.choice(sorted(session[section]))
    root = session[section][key]
    paths = [p for p in _paths(root) if p]
    path = rng.choice(paths)
    parent = root
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    action = rng.choice(["delete", "replace", "swap", "duplicate"])
    if action == "delete":
        del parent[last]
    elif action == "swap":
        parent[last] = rng.choice(_strings(session) or ["x"])
    elif action == "duplicate" and isinstance(parent[last], list) and parent[last]:
        parent[last].append(copy.deepcopy(rng.choice(parent[last])))
    else:
        parent[last] = copy.deepcopy(rng.choice(REPLACEMENTS))
    return f"{section}/{key[:15]}/{'/'.join(map(str, path))} {action}"


def _exercise(engine: Engine, tokens: dict[str, Any], where: str) -> None:
    """Every call an agent can make on the imported runs: no INTERNAL_ERROR."""
    for run in tokens["runs"]:
        assert run.get("error", {}).get("code") != "INTERNAL_ERROR", (where, run)
        if "error" in run:
            continue
        rehydrated = engine.rehydrate(run["stateToken"])
        if rehydrated.value_or(None) is None:
            assert rehydrated.failure().code != "INTERNAL_ERROR", (where, rehydrated)
        if run.get("ackToken"):
            advanced = engine.advance(
                run["stateToken"], run["ackToken"], notes_markdown="Done; tests pass." * 5
            )
            if advanced.value_or(None) is None:
                assert advanced.failure().code != "INTERNAL_ERROR", (where, advanced.failure())
        if run.get("checkpointToken"):
            checkpoint = engine.checkpoint(run["checkpointToken"])
            if checkpoint.value_or(None) is None:
                assert checkpoint.failure().code != "INTERNAL_ERROR", (where, checkpoint)


def test_resealed_mutations_are_refused_or_import_as_working_sessions(
    sources: list[dict[str, Any]],
) -> None:
    """Into the in-memory store: what is checked is the import's validation and the engine
    on what it let in (storing the bundles on files is the round-trip tests' part)."""
    rng = random.Random(16)
    engine = memory_engine(ROOT / "workflows")
    sessions = engine.deps.sessions
    stored = refused = 0
    for n in range(MUTATIONS):
        doc = copy.deepcopy(sources[n % len(sources)])
        where = mutate(doc, rng)
        raw = encode(rekey(doc))
        before = sessions.list_ids().unwrap()
        imported = engine.import_session(raw)
        if imported.value_or(None) is None:
            failure = imported.failure()
            assert failure.code in BUNDLE_CODES, (where, failure)
            assert failure.path, (where, failure)
            assert sessions.list_ids().unwrap() == before, where
            refused += 1
            continue
        stored += 1
        _exercise(engine, imported.unwrap().tokens, where)
    assert stored + refused == MUTATIONS
    assert refused > MUTATIONS // 2  # most edits break something, and are caught
