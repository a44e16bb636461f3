"""With an MCP catalogue, `workrail mcp` on stdio builds the SDK's server only when a
request needs it: a client that asks only what WorkRail answers itself (initialize, the
listings, ping, plain tool calls) is served to its end without the SDK ever being
imported; the first request only the SDK answers builds it, and every frame read before,
the notifications included, reaches it in order. Real processes, run through
tests/mcp/sdk_probe.py, which reports what the SDK loaded and received."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.sdk_probe import REPORT
from tests.mcp.servers import INITIALIZE, ROOT, run_workrail, server_env
from workrail.mcp.stdio_serve import HELD_FRAMES_MAX

_PROBE = ["-m", "tests.mcp.sdk_probe", "mcp"]
_SDK = ["-m", "workrail", "mcp", "--stdio", "sdk"]
_INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
_START = (
    b'{"jsonrpc":"2.0","id":"start","method":"tools/call","params":{"name":"start_workflow",'
    b'"arguments":{"workflowId":"branch-flow"}}}'
)


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


_FIRST_REQUESTS = [
    _request(2, "tools/list"),
    _request(3, "prompts/list"),
    _request(4, "resources/list"),
    _request(5, "resources/templates/list"),
    _request(6, "ping"),
    _request(7, "tools/call", {"name": "list_workflows", "arguments": {}}),
    _request(8, "tools/call", {"name": "list_workflows", "_meta": {"progressToken": "p-1"}}),
    _request(9, "tools/call", {"name": "inspect_workflow", "arguments": {"workflowId": "nope"}}),
]
"""What clients send right after connecting, each answered by WorkRail without the SDK."""


@pytest.fixture
def catalogued(data_dir: Path) -> Path:
    """A data directory with its MCP catalogue made, and a session in its store."""
    done = subprocess.run(
        [sys.executable, "-m", "workrail.mcp.catalog_gen"],
        env=server_env(data_dir),
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    started = run_workrail(data_dir, "mcp", input=_frames(_START))
    assert b'"isError":false' in started.stdout, started.stderr
    return data_dir


def _frames(*frames: bytes) -> bytes:
    return b"".join([json.dumps(INITIALIZE).encode() + b"\n", *(f + b"\n" for f in frames)])


def _converse(
    args: list[str], data_dir: Path, frames: bytes, answers: int
) -> tuple[list[bytes], bytes]:
    """Write `frames`, read `answers` lines, then close stdin (the SDK's own transport
    drops requests still in flight at its end); (the lines, stderr). The process must
    exit 0, with nothing more on stdout."""
    with subprocess.Popen(
        [sys.executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(data_dir),
        cwd=ROOT,
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        try:
            proc.stdin.write(frames)
            proc.stdin.flush()
            lines = [proc.stdout.readline().rstrip(b"\n") for _ in range(answers)]
            proc.stdin.close()
            rest = proc.stdout.read()
            errors = proc.stderr.read()
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, errors
    assert rest == b"", "an answer too many"
    return lines, errors


def _report(errors: bytes) -> dict[str, Any]:
    last = errors.decode().rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith(REPORT), errors
    report: dict[str, Any] = json.loads(last.removeprefix(REPORT))
    return report


def _by_id(lines: list[bytes]) -> dict[Any, bytes]:
    answered = {json.loads(line)["id"]: line for line in lines}
    assert len(answered) == len(lines), "an id answered twice"
    return answered


def test_a_client_asking_what_workrail_answers_is_served_without_the_sdk(
    catalogued: Path,
) -> None:
    frames = _frames(_INITIALIZED, *_FIRST_REQUESTS)
    reference, _ = _converse(_SDK, catalogued, frames, answers=1 + len(_FIRST_REQUESTS))
    ours, errors = _converse(
        _PROBE, catalogued, frames + _START + b"\n", answers=2 + len(_FIRST_REQUESTS)
    )
    assert _report(errors) == {"sdk_loaded": False, "received": []}
    answered = _by_id(ours)
    started = answered.pop("start")  # tool calls run side by side: answers come in any order
    assert answered == _by_id(reference)
    assert b"workrail://sessions/" in answered[4], "the session in the store is listed"
    assert b'"isError":false' in started


def test_a_request_only_the_sdk_answers_builds_it_and_everything_read_reaches_it(
    catalogued: Path,
) -> None:
    """The SDK's server sees the `initialize` and the notification held for it, then the
    request it alone answers and every request after it, in order; each answer is the
    SDK's own (a plain tool call is answered beside it, as before the build)."""
    after = [
        _request(3, "prompts/get", {"name": "branch-flow", "arguments": {"goal": "ship"}}),
        _request(4, "ping"),
        _request(5, "tools/call", {"name": "list_workflows"}),
        _request(6, "resources/list"),
        _request(7, "no/such/method"),
    ]
    frames = _frames(_INITIALIZED, _request(2, "tools/list"), *after)
    reference, _ = _converse(_SDK, catalogued, frames, answers=2 + len(after))
    ours, errors = _converse(_PROBE, catalogued, frames, answers=2 + len(after))
    report = _report(errors)
    assert report["sdk_loaded"] is True
    assert report["received"] == [
        "initialize",
        "notifications/initialized",
        "prompts/get",
        "ping",
        "resources/list",
        "no/such/method",
    ]
    assert [json.loads(line)["id"] for line in ours[:2]] == [1, 2]  # before the build
    assert _by_id(ours) == _by_id(reference)
    assert json.loads(_by_id(ours)[7])["error"]["code"] == -32601


@pytest.mark.parametrize("notifications", [HELD_FRAMES_MAX - 1, HELD_FRAMES_MAX])
def test_notifications_wait_for_the_sdk_only_up_to_a_bound(
    catalogued: Path, notifications: int
) -> None:
    """Held with the `initialize` for the SDK's server, which has nothing to answer; past
    HELD_FRAMES_MAX frames held, the server is built and takes them."""
    frames = _frames(*[_INITIALIZED] * notifications)
    _, errors = _converse(_PROBE, catalogued, frames, answers=1)
    report = _report(errors)
    built = notifications + 1 > HELD_FRAMES_MAX
    assert report["sdk_loaded"] is built
    if built:
        assert report["received"] == ["initialize", *["notifications/initialized"] * notifications]


_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "agent", "version": "3.1"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
}


def _modern(request_id: int | str, method: str, **params: Any) -> bytes:
    """A request as a 2026-era client sends it: no `initialize`, its envelope in `_meta`."""
    return _request(request_id, method, {**params, "_meta": _ENVELOPE})  # type: ignore[arg-type]


_MODERN_FIRST = [
    _modern(1, "server/discover"),
    _modern(2, "tools/list"),
    _modern(3, "prompts/list"),
    _modern(4, "tools/call", name="list_workflows", arguments={}),
    _modern(5, "tools/call", name="inspect_workflow", arguments={"workflowId": "nope"}),
]
"""What a 2026-era client (the Python SDK's, by default) sends first."""


def test_a_2026_era_client_asking_what_workrail_answers_is_served_without_the_sdk(
    catalogued: Path,
) -> None:
    frames = b"".join(f + b"\n" for f in _MODERN_FIRST)
    reference, _ = _converse(_SDK, catalogued, frames, answers=len(_MODERN_FIRST))
    start = _modern("start", "tools/call", name="start_workflow", arguments={"workflowId": "x"})
    ours, errors = _converse(_PROBE, catalogued, frames + start + b"\n", answers=6)
    assert _report(errors) == {"sdk_loaded": False, "received": []}
    answered = _by_id(ours)
    started = json.loads(answered.pop("start"))["result"]  # in any order among the calls
    assert answered == _by_id(reference)
    assert json.loads(answered[2])["result"]["resultType"] == "complete"
    assert started["_meta"] == json.loads(answered[1])["result"]["_meta"]


def test_a_2026_era_request_only_the_sdk_answers_builds_it_in_that_era(
    catalogued: Path,
) -> None:
    """The SDK's server sees the opening request first (and answers it only once, on the
    wire), so it serves the connection in the 2026 era: an `initialize` or a call without
    the envelope is refused, as by the SDK alone."""
    after = [
        _modern(3, "resources/list"),
        json.dumps(INITIALIZE).encode().replace(b'"id": 1', b'"id": 4'),
        _request(5, "tools/call", {"name": "list_workflows", "arguments": {}}),
        _modern(6, "tools/call", name="list_workflows", arguments={}),
    ]
    frames = b"".join(f + b"\n" for f in [*_MODERN_FIRST[:2], *after])
    reference, _ = _converse(_SDK, catalogued, frames, answers=2 + len(after))
    ours, errors = _converse(_PROBE, catalogued, frames, answers=2 + len(after))
    report = _report(errors)
    assert report["sdk_loaded"] is True
    assert report["received"][:2] == ["server/discover", "resources/list"]
    assert _by_id(ours) == _by_id(reference)
    assert {n for n, line in _by_id(ours).items() if b'"error"' in line} == {4, 5}


@pytest.mark.parametrize("opening", ["prompts/list", "server/discover"])
def test_a_later_request_reusing_the_opening_id_gets_its_own_answer(
    catalogued: Path, opening: str
) -> None:
    """The opening request answered at start-up reaches the SDK's server under an id of
    the transport's own: the answer dropped as a duplicate is its answer, never that of a
    later request with the same id (a 2026-era client may reuse one: no session ties its
    requests together)."""
    frames = _modern(1, opening) + b"\n" + _modern(1, "ping") + b"\n"
    reference, _ = _converse(_SDK, catalogued, frames, answers=2)
    ours, errors = _converse(_PROBE, catalogued, frames, answers=2)
    assert sorted(ours) == sorted(reference)
    assert sum(b'"error"' in line for line in ours) == 1  # ping does not exist at 2026
    assert b"differs from the SDK's" not in errors
    assert _report(errors)["received"] == [opening, "ping"]


def test_a_2026_era_client_opening_with_list_workflows_is_served_without_the_sdk(
    catalogued: Path,
) -> None:
    """`list_workflows` has no effect, so it may open the connection from the catalogue
    (the SDK's server, if built later, is handed it first); another first call waits."""
    frames = b"".join(f + b"\n" for f in [_MODERN_FIRST[3], _MODERN_FIRST[1]])
    reference, _ = _converse(_SDK, catalogued, frames, answers=2)
    ours, errors = _converse(_PROBE, catalogued, frames, answers=2)
    assert _report(errors) == {"sdk_loaded": False, "received": []}
    assert _by_id(ours) == _by_id(reference)
    first_call = _MODERN_FIRST[4] + b"\n"
    _, errors = _converse(_PROBE, catalogued, first_call, answers=1)
    assert _report(errors)["received"] == ["tools/call"]
