"""The MCP catalogue (workrail.mcp.catalog_cache, catalog_gen): the answers the stdio
start-up gives from it are the SDK's, byte for byte, for every protocol revision, with
and without effect_checkpoint, with and without prompts; anything not plain is left to
the SDK; a catalogue is used only under the key of the situation it was made in, and the
server makes it again when that key changes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.server import MCPServer

from tests.mcp.servers import INITIALIZE, ROOT, run_workrail, server_env, stdio_server
from workrail.config import WorkrailConfig, load_config
from workrail.engine.api import Engine
from workrail.fence import FenceService, open_fence_service
from workrail.mcp.catalog_cache import (
    CATALOG_CALLS,
    CATALOG_METHODS,
    MODERN_CATALOG_METHODS,
    Catalogue,
    catalog_path,
    load_catalogue,
    save_catalogue,
    situation_key,
)
from workrail.mcp.catalog_gen import result_of, sdk_answer_lines, sdk_answers
from workrail.mcp.handshake import (
    HANDSHAKE_PROTOCOL_VERSIONS,
    MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_KEY,
    answer_cached_call,
    answer_listing,
    answer_modern_cached_call,
    answer_modern_listing,
)
from workrail.mcp.stdio_build import build_stdio_server

IDS: list[Any] = [1, 0, -7, 2**53 - 1, "list-1", "a"]


def sdk_answer(server: MCPServer, revision: str, frame: bytes) -> bytes:
    return sdk_answer_lines(server, revision, [frame])[0]


@pytest.fixture(scope="module")
def fence(tmp_path_factory: pytest.TempPathFactory) -> FenceService:
    return open_fence_service(tmp_path_factory.mktemp("fence"))


@pytest.fixture(scope="module")
def servers(engines: dict[bool, Engine], fence: FenceService) -> dict[tuple[bool, bool], MCPServer]:
    """(workflows?, fence?) → the server WorkRail's stdio transport builds."""
    return {
        (content, fenced): build_stdio_server(engines[content], fence if fenced else None)
        for content in (True, False)
        for fenced in (True, False)
    }


@pytest.mark.parametrize("fenced", [True, False], ids=["fence", "no-fence"])
@pytest.mark.parametrize("content", [True, False], ids=["workflows", "bare"])
@pytest.mark.parametrize("revision", HANDSHAKE_PROTOCOL_VERSIONS)
def test_the_catalogue_answers_as_the_sdk_does_for_every_revision(
    servers: dict[tuple[bool, bool], MCPServer], revision: str, content: bool, fenced: bool
) -> None:
    server = servers[(content, fenced)]
    methods = CATALOG_METHODS if content else ("tools/list",)
    results = {m: result_of(line) for m, line in sdk_answers(server, revision, methods).items()}
    tools = json.loads(results["tools/list"])["tools"]
    assert ("effect_checkpoint" in {t["name"] for t in tools}) is fenced
    for method in methods:
        for request_id in IDS:
            shapes: list[dict[str, Any]] = [{}, {"params": {}}]
            for shape in shapes:
                request = {"jsonrpc": "2.0", "id": request_id, "method": method, **shape}
                frame = json.dumps(request).encode()
                early = answer_listing(frame, results)
                assert early == (request_id, sdk_answer(server, revision, frame)), (
                    f"the catalogue's {method} differs from the SDK's"
                )


def _envelopes(revision: str) -> list[dict[str, Any]]:
    """Plain 2026-era envelopes other than the one the catalogue was asked with."""
    base = {PROTOCOL_VERSION_KEY: revision, "io.modelcontextprotocol/clientCapabilities": {}}
    return [
        base,
        {**base, "io.modelcontextprotocol/clientInfo": {"name": "agent-é", "version": "9"}},
        {**base, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "roots": {}}},
        {**base, "progressToken": 3},
    ]


@pytest.mark.parametrize("fenced", [True, False], ids=["fence", "no-fence"])
@pytest.mark.parametrize("revision", MODERN_PROTOCOL_VERSIONS)
def test_the_catalogue_answers_as_the_sdk_does_at_every_2026_era_revision(
    servers: dict[tuple[bool, bool], MCPServer], revision: str, fenced: bool
) -> None:
    server = servers[(True, fenced)]
    methods = (*MODERN_CATALOG_METHODS, *CATALOG_METHODS)
    answers = sdk_answers(server, revision, methods)
    results = {revision: {m: result_of(line) for m, line in answers.items()}}
    for method in methods:
        for request_id in IDS:
            for envelope in _envelopes(revision):
                request = {"jsonrpc": "2.0", "id": request_id, "method": method}
                frame = json.dumps({**request, "params": {"_meta": envelope}}).encode()
                assert answer_modern_listing(frame, results) == (
                    request_id,
                    sdk_answer(server, revision, frame),
                ), f"the catalogue's {method} differs from the SDK's"
    other = dict.fromkeys(HANDSHAKE_PROTOCOL_VERSIONS, results[revision])
    params = {"_meta": _envelopes(revision)[0]}
    frame = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
    ).encode()
    assert answer_modern_listing(frame, other) is None  # only at the request's revision


@pytest.mark.parametrize("revision", MODERN_PROTOCOL_VERSIONS)
def test_a_kept_call_answers_as_the_sdk_does_at_every_2026_era_revision(
    servers: dict[tuple[bool, bool], MCPServer], revision: str
) -> None:
    server = servers[(True, False)]
    asked = [_call(1, name, arguments={}, _meta=_envelopes(revision)[1]) for name in CATALOG_CALLS]
    kept = {
        revision: {
            name: result_of(line)
            for name, line in zip(
                CATALOG_CALLS, sdk_answer_lines(server, revision, asked), strict=True
            )
        }
    }
    for name in CATALOG_CALLS:
        for request_id in IDS:
            for envelope in _envelopes(revision):
                for frame in (
                    _call(request_id, name, _meta=envelope),
                    _call(request_id, name, arguments={}, _meta=envelope),
                ):
                    assert answer_modern_cached_call(frame, kept) == (
                        request_id,
                        sdk_answer(server, revision, frame),
                    ), f"the catalogue's {name} answer differs from the SDK's"
            assert answer_modern_cached_call(_call(request_id, name), kept) is None


def _call(request_id: Any, name: str = "list_workflows", **params: Any) -> bytes:
    request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    return json.dumps({**request, "params": {"name": name, **params}}).encode()


@pytest.mark.parametrize("content", [True, False], ids=["workflows", "bare"])
@pytest.mark.parametrize("revision", HANDSHAKE_PROTOCOL_VERSIONS)
def test_a_kept_call_answers_as_the_sdk_does_for_every_revision(
    servers: dict[tuple[bool, bool], MCPServer], revision: str, content: bool
) -> None:
    server = servers[(content, False)]
    kept = {
        name: result_of(sdk_answer(server, revision, _call(1, name, arguments={})))
        for name in CATALOG_CALLS
    }
    for name in CATALOG_CALLS:
        for request_id in IDS:
            for frame in (
                _call(request_id, name),
                _call(request_id, name, arguments={}),
                _call(request_id, name, _meta={"progressToken": "p"}),
            ):
                assert answer_cached_call(frame, kept) == (
                    request_id,
                    sdk_answer(server, revision, frame),
                ), f"the catalogue's {name} answer differs from the SDK's"


@pytest.mark.parametrize(
    "frame",
    [
        _call(1, arguments={"x": 1}),
        _call(1, arguments=[]),
        _call(1, _meta={}),
        _call(1, "inspect_workflow"),
        _call(None),
        _call(1.5),
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call"}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"list_workflows"}}',
    ],
)
def test_a_call_not_plain_or_not_kept_is_left_to_the_engine(frame: bytes) -> None:
    assert answer_cached_call(frame, {"list_workflows": b'{"content":[]}'}) is None


RESULTS = {"tools/list": b'{"tools":[]}', "prompts/list": b'{"prompts":[]}'}
CALLS = {"list_workflows": b'{"content":[],"isError":false}'}
NOT_PLAIN = {
    "a cursor": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "x"}},
    "_meta": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {}}},
    "null params": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": None},
    "list params": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []},
    "a notification": {"jsonrpc": "2.0", "method": "tools/list"},
    "bool id": {"jsonrpc": "2.0", "id": True, "method": "tools/list"},
    "null id": {"jsonrpc": "2.0", "id": None, "method": "tools/list"},
    "float id": {"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"},
    "id needing escapes": {"jsonrpc": "2.0", "id": 'a"b', "method": "tools/list"},
    "huge id": {"jsonrpc": "2.0", "id": 2**53, "method": "tools/list"},
    "extra key": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "x": 1},
    "jsonrpc 1.0": {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
    "resources/list": {"jsonrpc": "2.0", "id": 1, "method": "resources/list"},
    "tools/call": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}},
    "method not a string": {"jsonrpc": "2.0", "id": 1, "method": 7},
}


@pytest.mark.parametrize("request_", NOT_PLAIN.values(), ids=list(NOT_PLAIN))
def test_anything_not_plain_is_left_to_the_sdk(request_: dict[str, Any]) -> None:
    assert answer_listing(json.dumps(request_).encode(), RESULTS) is None


@pytest.mark.parametrize(
    "frame",
    [b"not json", b'{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list"}', b"[]", b"\xff"],
)
def test_malformed_frames_are_left_to_the_sdk(frame: bytes) -> None:
    assert answer_listing(frame, RESULTS) is None


def test_a_method_without_a_catalogue_entry_is_left_to_the_sdk() -> None:
    frame = b'{"jsonrpc":"2.0","id":1,"method":"prompts/list"}'
    assert answer_listing(frame, {"tools/list": b"{}"}) is None


# --- the key ---------------------------------------------------------------------------


def _config(data_dir: Path, workflows: Path, **env: str) -> WorkrailConfig:
    settings = {
        "WORKRAIL_DATA_DIR": str(data_dir),
        "WORKFLOW_STORAGE_PATH": str(workflows),
        "WORKFLOW_INCLUDE_USER": "false",
        "WORKFLOW_INCLUDE_PROJECT": "false",
        **env,
    }
    return load_config(settings, home=data_dir, cwd=data_dir).unwrap()


@pytest.fixture
def situation(tmp_path: Path) -> tuple[WorkrailConfig, Path, Path]:
    """(config, its workflow directory, a copy of a package tree)."""
    workflows = tmp_path / "workflows"
    workflows.mkdir()
    (workflows / "a.json").write_text("{}")
    package = tmp_path / "package"
    (package / "mcp").mkdir(parents=True)
    (package / "mcp" / "schemas.py").write_text("X = 1\n")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    return _config(data_dir, workflows), workflows, package


def test_the_key_is_stable_while_nothing_changes(
    situation: tuple[WorkrailConfig, Path, Path],
) -> None:
    config, _, package = situation
    assert situation_key(config, package) == situation_key(config, package)
    assert situation_key(config) == situation_key(config)


def _changes_key(config: WorkrailConfig, package: Path, change: Any) -> bool:
    before = situation_key(config, package)
    time.sleep(0.01)  # a distinct modification time even on coarse file systems
    change()
    return situation_key(config, package) != before


def test_an_edited_source_file_changes_the_key(
    situation: tuple[WorkrailConfig, Path, Path],
) -> None:
    config, _, package = situation
    schemas = package / "mcp" / "schemas.py"
    assert _changes_key(config, package, lambda: schemas.write_text("X = 22\n"))
    assert _changes_key(config, package, lambda: (package / "new.py").write_text(""))


def test_bytecode_does_not_change_the_key(situation: tuple[WorkrailConfig, Path, Path]) -> None:
    config, _, package = situation
    cache = package / "mcp" / "__pycache__"
    assert not _changes_key(config, package, lambda: cache.mkdir())
    assert not _changes_key(config, package, lambda: (cache / "schemas.pyc").write_bytes(b""))


def test_a_workflow_file_changes_the_key(situation: tuple[WorkrailConfig, Path, Path]) -> None:
    config, workflows, package = situation
    assert _changes_key(config, package, lambda: (workflows / "a.json").write_text('{"x":1}'))
    assert _changes_key(config, package, lambda: (workflows / "b.json").write_text("{}"))
    assert _changes_key(config, package, lambda: (workflows / "b.json").unlink())


def test_a_routine_edited_in_place_changes_the_key(
    situation: tuple[WorkrailConfig, Path, Path],
) -> None:
    """A routine is part of every workflow that includes it, and editing it changes no
    directory's modification time."""
    config, workflows, package = situation
    routine = workflows / "routines" / "r.json"
    assert _changes_key(config, package, lambda: routine.parent.mkdir())
    assert _changes_key(config, package, lambda: routine.write_text("{}"))
    assert _changes_key(config, package, lambda: routine.write_text('{"id":"r"}'))


def test_the_fence_key_changes_the_key(situation: tuple[WorkrailConfig, Path, Path]) -> None:
    config, _, package = situation

    def make_fence_key() -> None:
        open_fence_service(config.data_dir).close()

    assert _changes_key(config, package, make_fence_key)
    key = config.data_dir / "keys" / "fence.key"
    assert _changes_key(config, package, lambda: key.chmod(0o644))


def test_settings_change_the_key(situation: tuple[WorkrailConfig, Path, Path]) -> None:
    config, workflows, package = situation
    other = _config(config.data_dir, workflows, WORKFLOW_INCLUDE_BUNDLED="false")
    fenced = _config(config.data_dir, workflows, WORKRAIL_FENCE_URL="redis://127.0.0.1:1")
    keys = {situation_key(c, package) for c in (config, other, fenced)}
    assert len(keys) == 3


def test_a_catalogue_is_read_back_only_under_its_key(
    situation: tuple[WorkrailConfig, Path, Path],
) -> None:
    config, _, _ = situation
    catalogue = Catalogue("k1", True, {"2025-06-18": dict(RESULTS)}, {"2025-06-18": dict(CALLS)})
    save_catalogue(config, catalogue)
    assert load_catalogue(config, "k1") == catalogue
    assert load_catalogue(config, "k2") is None
    assert catalog_path(config).stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b"[]",
        b'{"format":2,"key":"k1","runnable":true,"results":{"r":{"tools/call":"{}"}},"calls":{}}',
        b'{"format":2,"key":"k1","runnable":true,"results":{"r":{"tools/list":1}},"calls":{}}',
        b'{"format":2,"key":"k1","runnable":"yes","results":{},"calls":{}}',
        b'{"format":2,"key":"k1","runnable":true,"results":{}}',
        b'{"format":2,"key":"k1","runnable":true,"results":{},"calls":{"r":{"start_workflow":"{}"}}}',
        b'{"format":2,"key":"k1","runnable":true,"results":{},"calls":{"r":{"list_workflows":{}}}}',
        b'{"format":1,"key":"k1","runnable":true,"results":{}}',
        b'{"format":99,"key":"k1","runnable":true,"results":{},"calls":{}}',
    ],
)
def test_a_damaged_catalogue_is_not_used(
    situation: tuple[WorkrailConfig, Path, Path], content: bytes
) -> None:
    config, _, _ = situation
    catalog_path(config).parent.mkdir(parents=True)
    catalog_path(config).write_bytes(content)
    assert load_catalogue(config, "k1") is None


# --- over real processes ---------------------------------------------------------------

_INITIALIZE = json.dumps(INITIALIZE).encode()
_FOLLOWING = [
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":3,"method":"prompts/list"}',
    b'{"jsonrpc":"2.0","id":4,"method":"resources/list"}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_workflows",'
    b'"arguments":{}}}',
]


def _talk(data_dir: Path, *extra: str, following: list[bytes] = _FOLLOWING) -> dict[int, bytes]:
    """The answers, by id, to initialize and the requests that follow it."""
    with stdio_server(data_dir, *extra) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        try:
            proc.stdin.write(b"".join(f + b"\n" for f in [_INITIALIZE, *following]))
            proc.stdin.flush()
            asked = sum(b'"id"' in frame for frame in following)
            lines = [proc.stdout.readline().rstrip(b"\n") for _ in range(asked + 1)]
            proc.stdin.close()
            assert proc.stdout.read() == b"", "an answer too many"
            errors = proc.stderr.read()
            assert proc.wait(timeout=60) == 0, errors
        finally:
            if proc.poll() is None:
                proc.kill()
    assert b"differs from the SDK's" not in errors
    return {json.loads(line)["id"]: line for line in lines}


def _wait_for_catalogue(data_dir: Path) -> dict[str, Any]:
    path = data_dir / "cache" / "mcp-catalog.json"
    for _ in range(600):
        if path.exists():
            data: dict[str, Any] = json.loads(path.read_bytes())
            return data
        time.sleep(0.05)
    raise AssertionError("the server never wrote its catalogue")


def test_a_server_writes_its_catalogue_and_the_next_answers_from_it_as_the_sdk_does(
    data_dir: Path,
) -> None:
    first = _talk(data_dir)
    written = _wait_for_catalogue(data_dir)
    assert set(written["results"]) == {*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS}
    assert set(written["calls"]) == {*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS}
    assert written["runnable"] is True
    second = _talk(data_dir)
    reference = _talk(data_dir, "--stdio", "sdk")
    assert first == second == reference
    assert set(second) == {1, 2, 3, 4, 5}


def test_the_next_start_up_answers_from_the_catalogue(data_dir: Path) -> None:
    """Proof that the answer comes from the file: a catalogue planted under the right key
    is what the client gets (so nothing but the server should write that file)."""
    _talk(data_dir)
    written = _wait_for_catalogue(data_dir)
    planted = '{"tools":[{"name":"planted","inputSchema":{"type":"object"}}]}'
    written["results"]["2025-06-18"]["tools/list"] = planted
    written["calls"]["2025-06-18"]["list_workflows"] = '{"content":[],"isError":true}'
    (data_dir / "cache" / "mcp-catalog.json").write_text(json.dumps(written))
    sdk_only = b'{"jsonrpc":"2.0","id":4,"method":"resources/list","params":{"cursor":"0"}}'
    answers = _talk(data_dir, following=[*_FOLLOWING[:3], sdk_only, _FOLLOWING[4]])
    assert json.loads(answers[2])["result"]["tools"][0]["name"] == "planted"
    # Held behind a request only the SDK answers (a cursor), the call waits for it too.
    assert json.loads(answers[5])["result"]["isError"] is False
    called_first = _talk(data_dir, following=[_FOLLOWING[0], _FOLLOWING[4], _FOLLOWING[1]])
    assert json.loads(called_first[5])["result"] == {"content": [], "isError": True}


def test_a_catalogue_made_under_another_key_is_not_used_and_is_made_again(
    data_dir: Path,
) -> None:
    _talk(data_dir)
    written = _wait_for_catalogue(data_dir)
    path = data_dir / "cache" / "mcp-catalog.json"
    stale = {**written, "key": "0" * 64}
    stale["results"]["2025-06-18"]["tools/list"] = '{"tools":[]}'
    path.write_text(json.dumps(stale))
    answers = _talk(data_dir, "--stdio", "workrail")
    assert json.loads(answers[2])["result"]["tools"], "the stale catalogue was used"
    for _ in range(600):
        if json.loads(path.read_bytes())["key"] == written["key"]:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the catalogue was not made again")


def test_the_regeneration_command_writes_the_catalogue_of_these_settings(
    data_dir: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "workrail.mcp.catalog_gen"],
        env=server_env(data_dir),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "mcp-catalog.json" in done.stdout
    env = server_env(data_dir)
    config = load_config(env, home=Path.home(), cwd=ROOT).unwrap()
    catalogue = load_catalogue(config, situation_key(config))
    assert catalogue is not None
    assert catalogue.runnable
    assert set(catalogue.results) == {*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS}


@pytest.mark.parametrize("with_catalogue", [False, True], ids=["first start", "catalogue"])
def test_a_store_that_cannot_open_while_the_client_asks_ends_in_one_clear_line(
    data_dir: Path, with_catalogue: bool
) -> None:
    """The store opens on the loading thread, while the client is being answered: its
    failure still ends the server with the one line a failed start-up prints."""
    if with_catalogue:
        _talk(data_dir)
        _wait_for_catalogue(data_dir)
    keyring = data_dir / "keys" / "keyring.json"
    keyring.parent.mkdir(exist_ok=True)
    keyring.write_bytes(b"{not json")
    keyring.chmod(0o600)
    done = run_workrail(data_dir, "mcp", input=b"\n".join([_INITIALIZE, *_FOLLOWING]) + b"\n")
    assert done.returncode == 1, done.stderr
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr, stderr
    assert "never retrieved" not in stderr, stderr
    assert "KEYRING_CORRUPT" in stderr


def test_a_catalogue_that_is_a_symlink_or_not_private_is_not_used(
    situation: tuple[WorkrailConfig, Path, Path], tmp_path: Path
) -> None:
    config, _, _ = situation
    catalogue = Catalogue("k1", True, {"2025-06-18": dict(RESULTS)}, {"2025-06-18": dict(CALLS)})
    save_catalogue(config, catalogue)
    path = catalog_path(config)
    path.chmod(0o666)
    assert load_catalogue(config, "k1") is None
    path.chmod(0o600)
    elsewhere = tmp_path / "elsewhere.json"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    assert load_catalogue(config, "k1") is None
    path.unlink()
    path.parent.rmdir()
    (tmp_path / "cache-elsewhere").mkdir(mode=0o700)
    path.parent.symlink_to(tmp_path / "cache-elsewhere")
    with pytest.raises(OSError, match="not a private directory"):
        save_catalogue(config, catalogue)
    assert load_catalogue(config, "k1") is None


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"_meta": {"progressToken": 1}},
        {"cursor": "0", "_meta": _envelopes(MODERN_PROTOCOL_VERSIONS[-1])[0]},
        {"_meta": {**_envelopes(MODERN_PROTOCOL_VERSIONS[-1])[0], "x": 1}},
        {"_meta": _envelopes("2025-11-25")[0]},
        {"_meta": {**_envelopes(MODERN_PROTOCOL_VERSIONS[-1])[0], PROTOCOL_VERSION_KEY: 2026}},
    ],
)
def test_a_2026_era_listing_not_plain_is_left_to_the_sdk(params: dict[str, Any] | None) -> None:
    results = {r: {"tools/list": b'{"tools":[]}'} for r in MODERN_PROTOCOL_VERSIONS}
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    if params is not None:
        request["params"] = params
    assert answer_modern_listing(json.dumps(request).encode(), results) is None
