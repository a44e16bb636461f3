"""WorkRail's stdio transport: every frame gets an answer, parse errors included, and the
server goes on serving (raw frames into a real `workrail mcp` process)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.servers import INITIALIZE, run_workrail
from workrail.mcp.stdio import INVALID_REQUEST, PARSE_ERROR, parse_frame

INIT = INITIALIZE


def _call(request_id: int, params: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}'


HOSTILE = {
    # a truncated emoji from a JS client: a lone surrogate escape
    "lone surrogate": (_call(11, '{"name":"list_workflows","arguments":{"a":"\\ud83d"}}'), 11),
    "huge integer": (_call(12, '{"name":"x","arguments":{"n":' + "9" * 5000 + "}}"), 12),
    "deep nesting": (_call(13, '{"name":"x","arguments":{"a":' + "[" * 300 + "]" * 300 + "}}"), 13),
    "not json": ("this is not json", None),
    "truncated": ('{"jsonrpc":"2.0","id":14,"method":"tools/ca', 14),
}


@pytest.mark.parametrize(("frame", "expected_id"), HOSTILE.values(), ids=list(HOSTILE))
def test_unparseable_frames_are_parse_errors_with_their_id(frame: str, expected_id: Any) -> None:
    answer = parse_frame(frame.encode())
    assert isinstance(answer, dict)
    assert answer["error"]["code"] == PARSE_ERROR
    assert answer["id"] == expected_id
    assert answer["jsonrpc"] == "2.0"


def test_json_that_is_not_json_rpc_is_an_invalid_request() -> None:
    answer = parse_frame(b'{"id": "abc", "hello": 1}')
    assert isinstance(answer, dict)
    assert answer["error"]["code"] == INVALID_REQUEST
    assert answer["id"] == "abc"


def test_a_valid_frame_is_the_sdk_message() -> None:
    message = parse_frame(json.dumps(INIT).encode())
    assert not isinstance(message, dict)


def test_a_real_server_answers_every_frame_and_keeps_serving(data_dir: Path) -> None:
    frames = [json.dumps(INIT), '{"jsonrpc":"2.0","method":"notifications/initialized"}']
    frames += [frame for frame, _ in HOSTILE.values()]
    frames += ['{"jsonrpc":"2.0","id":99,"method":"ping"}']
    done = run_workrail(data_dir, "mcp", input="\n".join(frames) + "\n", text=True)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    by_id = {a.get("id"): a for a in answers}
    assert by_id[1]["result"]["serverInfo"]["name"] == "workrail"
    for _frame, expected_id in HOSTILE.values():
        if expected_id is not None:
            assert by_id[expected_id]["error"]["code"] == PARSE_ERROR
    assert sum(1 for a in answers if a.get("id") is None) == 1  # "not json"
    assert by_id[99]["result"] == {}
    assert len(answers) == 2 + len(HOSTILE)  # nothing else on stdout


@pytest.mark.parametrize("stdin", ["null device", "regular file"])
def test_stdin_that_is_not_a_pipe_is_read_to_its_end(
    data_dir: Path, tmp_path: Path, stdin: str
) -> None:
    """Input redirected from a file (or from the null device) is read without the event
    loop (epoll refuses both): every request answered, then a clean exit at its end."""
    requests = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    )
    source = Path(os.devnull)
    if stdin == "regular file":
        source = tmp_path / "requests.jsonl"
        source.write_bytes(requests)
    with open(source, "rb") as file:
        done = run_workrail(data_dir, "mcp", stdin=file)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    ids = [json.loads(line)["id"] for line in done.stdout.splitlines()]
    assert ids == ([] if stdin == "null device" else [1, 2])
