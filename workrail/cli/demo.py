"""`workrail demo`: a scripted agent drives the bundled `wr.coding-task` workflow through the
real MCP server (a `workrail mcp` subprocess over stdio, in a new temporary data directory
or the one `--data-dir` names).

It exercises what an agent relies on: start, advance with notes, a validation block and its
one-call retry, checkpoint and its replay, an ack replay that writes nothing, a loop over
the plan, rehydrate, a tampered token, a loop decided by an artifact, a hand-off contract,
completion; then prints the session's DAG. Every expectation
is checked, so the exit code makes it a smoke test. The session is kept, and the demo ends
with the commands that show it; `--clean` removes it instead.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from returns.result import Success
from rich.console import Console
from rich.markup import escape

from workrail.app import build_engine, open_backend
from workrail.cli.context import Cli, add_command
from workrail.config import DATA_DIR_ENV, STORE_URL_ENV, load_config
from workrail.engine.api import Backend, Engine

if TYPE_CHECKING:  # the MCP client is imported only when the demo runs
    from mcp import Client, StdioServerParameters
    from mcp.types import CallToolResult

WORKFLOW_ID = "wr.coding-task"


class DemoFailure(Exception):
    """An expectation did not hold; the message says which."""


@dataclass
class Report:
    console: Console
    data_dir: Path
    checks: list[dict[str, Any]] = field(default_factory=list)
    session_id: str = ""
    """The demo's session, once start_workflow has answered."""

    def check(self, name: str, ok: bool, detail: str = "") -> None:
        self.checks.append({"check": name, "ok": ok, "detail": detail})
        mark = "[green]✔[/]" if ok else "[red]✘[/]"
        self.console.print(f"  {mark} {name}" + (f" [dim]— {detail}[/]" if detail else ""))
        if not ok:
            raise DemoFailure(name + (f": {detail}" if detail else ""))

    def section(self, title: str) -> None:
        self.console.print(f"\n[bold cyan]▶ {title}[/]")

    def event_count(self) -> int:
        """Read from disk, not from the server: proof of what was (not) written."""
        if not self.session_id:
            return -1
        read = demo_backend(self.data_dir).sessions.read(self.session_id, lambda log: log.count)
        if not isinstance(read, Success):
            raise DemoFailure(f"cannot read the session back: {read.failure()}")
        return int(read.unwrap())


NOTES: dict[str, str] = {
    "triage": (
        "**Task**: add a `--json` flag to the report command so scripts can parse it.\n\n"
        "**Acceptance criteria**: 1. `report --json` prints valid JSON; 2. the default output "
        "is unchanged.\n\n**Size and risk**: small (two files), low risk (internal command)."
    ),
    "gather-context__map-ground": (
        "**Files**: `report/cli.py` (argument parsing), `report/render.py` (output), "
        "`tests/test_report.py` (tests).\n\n**Commands**: `pytest`, `ruff check`, `mypy report`."
        "\n\n**Conventions**: renderers return strings; the CLI only prints."
    ),
    "gather-context__sort-knowledge": (
        "**Facts**: rendering is in `report/render.py:12`.\n\n**Assumptions**: none beyond "
        "the documented output.\n\n**Questions**: none blocking."
    ),
    "plan": (
        "1. **Serializer**: add `to_json()` in `report/render.py`; check with a unit test in "
        "`tests/test_report.py`.\n"
        "2. **Flag**: wire `--json` in `report/cli.py`; check with a CLI test asserting valid "
        "JSON on stdout.\n\n**Risks**: none beyond output format; the default stays unchanged."
        "\n\n**Coverage**: criterion 1 -> slice 2, criterion 2 -> slice 1."
    ),
    "implement-slice": (
        "Changed the files named in the plan for this slice; added a test first, then the "
        "smallest change. `pytest tests/test_report.py` → 3 passed."
    ),
    "run-tests__read": "`ruff` flagged an unused import in `report/cli.py`: a product bug.",
    "fix-failures": (
        "`ruff` flagged an unused import in `report/cli.py`; removed it. The checks run again next."
    ),
    "verify__criteria": (
        "1. `report --json` prints valid JSON: met (evidence: ran `report --json | python -m "
        "json.tool`, output parsed).\n2. Default output unchanged: met (evidence: "
        "`tests/test_report.py:40` passes)."
    ),
    "verify__loose-ends": "**Cleanups**: none. **Remaining**: no follow-ups.",
    "handoff__write": (
        "**Summary**: the report command gains `--json` for scripts.\n\n"
        "**Decisions**: a separate serializer, so the default renderer is untouched.\n\n"
        "**Files**: `report/render.py` (serializer), `report/cli.py` (flag), "
        "`tests/test_report.py` (tests).\n\n"
        "**Verification**: `pytest` → 42 passed; `mypy report` → clean; `ruff check` → clean.\n\n"
        "**Limitations**: none."
    ),
}
HANDOFF: dict[str, Any] = {
    "kind": "wr.coding_handoff",
    "version": 1,
    "keyDecisions": ["A separate serializer keeps the default renderer untouched"],
    "knownLimitations": [],
    "testsAdded": ["tests/test_report.py::test_json_output"],
    "filesChanged": ["report/render.py", "report/cli.py", "tests/test_report.py"],
}
FORMER_ID = "coding-task"
"""The id the workflow had before the library moved into the wr. namespace (an alias)."""


def _body(result: CallToolResult) -> dict[str, Any]:
    if result.structured_content is not None:
        return dict(result.structured_content)
    text = result.content[0].text if result.content and hasattr(result.content[0], "text") else ""
    parsed = json.loads(text)
    return parsed if isinstance(parsed, dict) else {}


def _tamper(token: str) -> str:
    """Flip one character of the signature part: still well-formed, no longer authentic."""
    head, sep, sig = token.rpartition(".")
    flipped = ("A" if sig[0] != "A" else "B") + sig[1:]
    return head + sep + flipped


async def _call(
    client: Client, report: Report, tool: str, args: dict[str, Any], *, expect_error: bool = False
) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    body = _body(result)
    if bool(result.is_error) != expect_error:
        report.check(
            f"{tool} {'failed' if result.is_error else 'succeeded'}", False, str(body)[:300]
        )
    return body


async def _advance(
    client: Client,
    report: Report,
    current: dict[str, Any],
    notes: str,
    context: dict[str, Any] | None = None,
    artifacts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Send the response's own nextCall, adding notes — exactly what an agent is told to do."""
    call = current["nextCall"]
    params: dict[str, Any] = dict(call["params"])
    params["output"] = {"notesMarkdown": notes}
    if artifacts:
        params["output"]["artifacts"] = artifacts
    if context is not None:
        params["context"] = context
    return await _call(client, report, call["tool"], params)


def _pending(body: dict[str, Any]) -> str | None:
    pending = body.get("pending")
    return pending["stepId"] if isinstance(pending, dict) else None


def _decision(decision: str) -> list[dict[str, Any]]:
    return [{"kind": "wr.loop_control", "loopId": "test-loop", "decision": decision}]


async def _discover(client: Client, report: Report) -> None:
    report.section("Discover")
    listed = await _call(client, report, "list_workflows", {})
    ids = [w["workflowId"] for w in listed["workflows"]]
    report.check(f"list_workflows offers {WORKFLOW_ID}", WORKFLOW_ID in ids, ", ".join(ids))
    inspected = await _call(client, report, "inspect_workflow", {"workflowId": FORMER_ID})
    report.check(
        f"inspect_workflow '{FORMER_ID}' (the former id) answers {WORKFLOW_ID}",
        inspected.get("workflowId") == WORKFLOW_ID,
        str(inspected.get("workflowId")),
    )
    report.check(
        "inspect_workflow previews the first step",
        inspected["compiled"].get("preview", {}).get("stepId") == "triage",
    )


async def _start(client: Client, report: Report) -> dict[str, Any]:
    """Start, then walk the context-gathering routine up to the plan."""
    report.section("Start and advance")
    r = await _call(client, report, "start_workflow", {"workflowId": WORKFLOW_ID, "context": {}})
    report.session_id = str(r.get("sessionId") or "")
    report.check("start_workflow → pending 'triage'", _pending(r) == "triage")
    report.check("response carries a ready nextCall", r["nextCall"]["tool"] == "continue_workflow")
    small = {"taskComplexity": "small", "riskLevel": "low"}
    r = await _advance(client, report, r, NOTES["triage"], small)
    for step in ("gather-context__map-ground", "gather-context__sort-knowledge"):
        report.check(f"the context-gathering routine → pending '{step}'", _pending(r) == step)
        r = await _advance(client, report, r, NOTES[step])
    report.check("routine done → pending 'plan'", _pending(r) == "plan", str(_pending(r)))
    return r


async def _checkpoint(client: Client, report: Report, r: dict[str, Any]) -> None:
    report.section("Checkpoint before risky work")
    ckpt = await _call(
        client, report, "checkpoint_workflow", {"checkpointToken": r["checkpointToken"]}
    )
    before = report.event_count()
    again = await _call(
        client, report, "checkpoint_workflow", {"checkpointToken": r["checkpointToken"]}
    )
    report.check(
        "checkpoint replay returns the same node and writes nothing",
        again["checkpointNodeId"] == ckpt["checkpointNodeId"] and report.event_count() == before,
        ckpt["checkpointNodeId"],
    )
    report.check("checkpoint does not advance", again["stateToken"] == r["stateToken"])


async def _plan(client: Client, report: Report, r: dict[str, Any]) -> dict[str, Any]:
    """A blocked plan, its one-call retry, then a replay of the blocked call's ack."""
    report.section("Validation block, then the one-call retry")
    blocked = await _advance(client, report, r, "Plan: do it.")
    issues = blocked.get("validation", {}).get("issues", [])
    report.check(
        "too-short plan is blocked with the step's own message",
        blocked.get("kind") == "blocked" and bool(issues),
        issues[0] if issues else "",
    )
    slices = {"planSlices": ["serializer", "flag"]}
    r = await _advance(client, report, blocked, NOTES["plan"], slices)
    report.check(
        "retry via nextCall; a small task skips the plan review → pending 'implement-slice'",
        _pending(r) == "implement-slice",
        str(_pending(r)),
    )

    report.section("Replay an ack: nothing is written twice")
    before = report.event_count()
    replay_params = dict(blocked["nextCall"]["params"])
    replay_params["output"] = {"notesMarkdown": "DIFFERENT notes on replay " + "x" * 80}
    replay = await _call(client, report, "continue_workflow", replay_params)
    same = {k: v for k, v in replay.items() if k != "warnings"} == r
    report.check(
        "replayed ack returns the recorded outcome",
        same and report.event_count() == before,
        f"{before} events before and after",
    )
    warned = [w.get("code") for w in replay.get("warnings", [])]
    report.check("the different output is flagged, not recorded", "OUTPUT_NOT_RECORDED" in warned)
    return r


async def _slices(client: Client, report: Report, r: dict[str, Any]) -> dict[str, Any]:
    """The loop over the plan's slices, then a rehydrate and a tampered token."""
    report.section("Loop over the plan's slices")
    for n in (1, 2):
        r = await _advance(client, report, r, NOTES["implement-slice"])
        report.check(f"slice {n} done", r.get("kind") == "ok", f"next: {_pending(r)}")
    report.check("loop exits → pending 'run-tests__run'", _pending(r) == "run-tests__run")

    report.section("Lose context, rehydrate")
    before = report.event_count()
    rehydrated = await _call(
        client, report, "continue_workflow", {"intent": "rehydrate", "stateToken": r["stateToken"]}
    )
    report.check(
        "rehydrate returns the same pending step and writes nothing",
        _pending(rehydrated) == "run-tests__run" and report.event_count() == before,
    )
    r = rehydrated

    report.section("A tampered token")
    bad = await _call(
        client,
        report,
        "continue_workflow",
        {"intent": "rehydrate", "stateToken": _tamper(r["stateToken"])},
        expect_error=True,
    )
    report.check(
        "tampered stateToken → TOKEN_BAD_SIGNATURE envelope",
        bad.get("code") == "TOKEN_BAD_SIGNATURE" and "suggestion" in bad.get("details", {}),
        bad.get("message", ""),
    )
    report.console.print_json(json.dumps(bad))
    return r


async def _tests(client: Client, report: Report, r: dict[str, Any]) -> dict[str, Any]:
    report.section("Tests until green (a loop decided by an artifact)")
    r = await _advance(client, report, r, "`pytest` → 41 passed, 1 failed.", {"testsFailing": 1})
    r = await _advance(client, report, r, NOTES["run-tests__read"])
    report.check("a failing run → pending 'fix-failures'", _pending(r) == "fix-failures")
    r = await _advance(client, report, r, NOTES["fix-failures"])
    r = await _advance(
        client, report, r, "Fixed one failure: run again.", None, _decision("continue")
    )
    report.check("decision 'continue' → the tests run again", _pending(r) == "run-tests__run")
    r = await _advance(client, report, r, "`pytest` → 42 passed.", {"testsFailing": 0})
    r = await _advance(client, report, r, "No failures.")
    report.check("a green run skips 'fix-failures'", _pending(r) == "test-decision")
    r = await _advance(client, report, r, "Green: stop.", None, _decision("stop"))
    report.check(
        "decision 'stop' exits the loop; low risk skips the security pass",
        _pending(r) == "verify__criteria",
        str(_pending(r)),
    )
    return r


async def _finish(client: Client, report: Report, r: dict[str, Any]) -> None:
    report.section("Verify, hand off, complete")
    r = await _advance(client, report, r, NOTES["verify__criteria"], {"verificationPassed": True})
    r = await _advance(client, report, r, NOTES["verify__loose-ends"])
    report.check("verification done → pending 'handoff__write'", _pending(r) == "handoff__write")
    blocked = await _advance(client, report, r, NOTES["handoff__write"])
    report.check(
        "a hand-off without its wr.coding_handoff artifact is blocked",
        blocked.get("kind") == "blocked",
    )
    r = await _advance(client, report, blocked, NOTES["handoff__write"], None, [HANDOFF])
    report.check(
        "workflow complete",
        r.get("isComplete") is True and r.get("nextIntent") == "complete" and r["nextCall"] is None,
    )


async def _script(client: Client, report: Report) -> str:
    """The agent's run, section by section; each section hands the latest response on."""
    await _discover(client, report)
    r = await _start(client, report)
    await _checkpoint(client, report, r)
    r = await _plan(client, report, r)
    r = await _slices(client, report, r)
    r = await _tests(client, report, r)
    await _finish(client, report, r)
    return report.session_id


def demo_env(base: Mapping[str, str], data_dir: Path) -> dict[str, str]:
    """The demo's server: files in its own data directory, bundled workflows only."""
    return {
        **base,
        DATA_DIR_ENV: str(data_dir),
        STORE_URL_ENV: "",
        "WORKFLOW_INCLUDE_USER": "false",
        "WORKFLOW_INCLUDE_PROJECT": "false",
        "WORKFLOW_STORAGE_PATH": "",
    }


def demo_backend(data_dir: Path) -> Backend:
    """The demo's data, read directly (not through the server it checks)."""
    config = load_config(demo_env({}, data_dir)).unwrap()
    return open_backend(config).unwrap()


def demo_engine(data_dir: Path) -> Engine:
    """The engine over the demo's data, to show the run DAG the server wrote."""
    config = load_config(demo_env({}, data_dir)).unwrap()
    return build_engine(config, open_backend(config).unwrap()).unwrap()


def _server_params(base: Mapping[str, str], data_dir: Path) -> StdioServerParameters:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "workrail", "mcp"], env=demo_env(base, data_dir)
    )


async def drive(report: Report, base_env: Mapping[str, str]) -> str:
    """Run the script against a fresh server; checks accumulate in `report` as they pass,
    so a failure still leaves the checks made so far."""
    from mcp import Client
    from mcp.client.stdio import stdio_client

    # The server's stderr goes to ours as it is now (the SDK's default is whatever
    # sys.stderr was when it was first imported).
    transport = stdio_client(_server_params(base_env, report.data_dir), errlog=sys.stderr)
    async with Client(transport) as client:
        return await _script(client, report)


def _reason(exc: BaseException) -> str:
    """The innermost cause: task groups wrap a failed check in an ExceptionGroup."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, DemoFailure):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _data_dir(cli: Cli) -> tuple[Path, bool]:
    """The directory the demo writes to, and whether the demo made it (so `--clean` may
    remove all of it)."""
    given = getattr(cli.args, "data_dir", None)
    if given:
        return Path(given).expanduser().absolute(), False
    return Path(tempfile.mkdtemp(prefix="workrail-demo-")), True


def program() -> str:
    """How to run `workrail` again the way it was run now: by name when that is on PATH,
    else by its path (as `scripts/run` starts it)."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("workrail")
    if argv0.name != "workrail":
        return "workrail"
    on_path = shutil.which("workrail")
    if on_path is not None and argv0.exists() and Path(on_path).samefile(argv0):
        return "workrail"
    return shlex.quote(str(argv0.absolute())) if argv0.exists() else "workrail"


def look_commands(data_dir: Path, session_id: str) -> list[str]:
    """The exact commands that show what the demo left behind."""
    prefix = f"{program()} --data-dir {shlex.quote(str(data_dir))}"
    commands = [f"{prefix} sessions"]
    if session_id:
        commands.append(f"{prefix} sessions show {session_id}")
    if importlib.util.find_spec("workrail.cli.console") is not None:
        commands.append(f"{prefix} console")
    return commands


def _clean(data_dir: Path) -> str:
    """Remove the demo's own temporary directory (never a directory the user named)."""
    shutil.rmtree(data_dir, ignore_errors=True)
    return f"removed {data_dir}"


def _run(report: Report, env: Mapping[str, str]) -> str | None:
    """None when every check held, else why the run stopped."""
    try:
        import anyio

        anyio.run(drive, report, env)
    except Exception as exc:  # a failed check, or the server or transport broke
        return _reason(exc)
    return None


def _print_dag(console: Console, data_dir: Path, session_id: str) -> None:
    from workrail.cli.session_tree import print_whole, session_tree

    if session_id:
        view = demo_engine(data_dir).session_view(session_id)
        console.print("\n[bold cyan]▶ The session's run DAG[/]")
        print_whole(console, session_tree(view))


def _print_kept(console: Console, cleaned: str | None, commands: list[str]) -> None:
    """What became of the data: removed by --clean, or kept with the commands that show it."""
    if cleaned is not None:
        console.print(f"[dim]--clean: {escape(cleaned)}[/]", soft_wrap=True)
        return
    console.print("\nThe session is kept. Look at it with:")
    for command in commands:
        console.print(f"  {command}", markup=False, soft_wrap=True)
    console.print(
        f"[dim]`{escape(program())} demo --clean` removes a demo's data when it ends.[/]",
        soft_wrap=True,
    )


def run_demo(cli: Cli) -> int:
    """Exit 0 only if every expectation held."""
    as_json = cli.as_json
    if cli.args.clean and getattr(cli.args, "data_dir", None):
        return cli.input_error(
            "--clean removes the demo's own temporary directory; it never deletes from a "
            "--data-dir you named.",
            "Drop --data-dir to run the demo in a temporary directory that --clean removes, "
            "or drop --clean to keep the session in your directory.",
        )
    console = Console(file=cli.err if as_json else cli.out, highlight=False)
    data_dir, made = _data_dir(cli)
    console.print(
        f"[bold]WorkRail demo[/]: a scripted agent drives '{WORKFLOW_ID}' through "
        f"`workrail mcp` (stdio)\n[dim]data directory: {data_dir}[/]"
    )
    report = Report(console, data_dir)
    failure = _run(report, cli.env)
    session_id = report.session_id
    _print_dag(console, data_dir, session_id)
    ok = failure is None
    console.print(
        "\n[bold green]Demo passed[/]: every step behaved as expected."
        if ok
        else f"\n[bold red]Demo failed[/]: {escape(failure or '')}"
    )
    commands = look_commands(data_dir, session_id)
    cleaned = _clean(data_dir) if cli.args.clean and made else None
    _print_kept(console, cleaned, commands)
    if not ok:
        console.print(
            "Next: the check above says what went wrong; run with --json for every check, "
            "or `workrail mcp --log-level DEBUG` to see the server's side.",
            markup=False,
        )
    if as_json:
        cli.print_json(
            {
                "ok": ok,
                "failure": failure,
                "sessionId": session_id,
                "dataDir": str(data_dir),
                "kept": cleaned is None,
                "commands": commands if cleaned is None else [],
                "checks": report.checks,
            }
        )
    return 0 if ok else 1


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    demo = add_command(
        subparsers,
        common,
        "demo",
        "drive a bundled workflow end to end through the real MCP server",
        "Start `workrail mcp` on a new temporary data directory (or --data-dir) "
        "and play a scripted agent through a bundled workflow, then print the commands that "
        "show the session it made. Exits 0 only if every step behaved as expected.",
    )
    demo.add_argument(
        "--clean",
        action="store_true",
        help="remove the demo's temporary data directory when it ends (by default it is "
        "kept to look at); not with --data-dir",
    )
    demo.set_defaults(handler=run_demo)
