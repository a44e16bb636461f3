"""What the stdio start-up loads before its first answers: a first tool call and a
resources/list wait for what they use, not for the bundle models, the advance machinery
or the SDK (its protocol types included: none of it loads until a request needs it), and
no model builds its validator before it is used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.mcp.servers import ROOT, server_env

_PROBE = """
import json, sys
from pydantic import BaseModel
from returns.result import Success
from workrail.app import build_engine, open_backend
from workrail.config import config_from_process
from workrail.mcp.early_call import answer_call, tool_call
from workrail.mcp.resource_listing import answer_resource_listing
from workrail.mcp.tool_calls import engine_tools

def built():
    pending, out = [BaseModel], []
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if sub.__module__.startswith("workrail.") and sub.__pydantic_complete__:
                out.append(sub.__qualname__)
    return out

at_import = built()
config = config_from_process().unwrap()
engine = build_engine(config, open_backend(config).unwrap()).unwrap()
calls = {spec.name: (spec, h) for spec, h in engine_tools(engine)}
frame = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_workflows"}}'
line = answer_call(*tool_call(frame, calls))
listed = answer_resource_listing(2, "resources/list", engine)
print(json.dumps({
    "answered": b'"isError":false' in line and b'"resources"' in listed,
    "built_at_import": at_import,
    "loaded": sorted(m for m in sys.modules if m.startswith(("workrail.", "mcp"))),
}))
"""


def test_a_first_call_and_listing_load_neither_bundles_nor_advance_nor_the_sdk(
    data_dir: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=server_env(data_dir),
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=True,
    )
    probe = json.loads(done.stdout)
    assert probe["answered"]
    assert probe["built_at_import"] == []
    loaded = set(probe["loaded"])
    unwanted = {"mcp", "mcp.server", "mcp_types"} | {
        "workrail.bundle.validate",
        "workrail.engine.advance",
    }
    assert not unwanted & loaded, sorted(unwanted & loaded)
    assert not [m for m in loaded if m.startswith("workrail.mcp.bundles")]
