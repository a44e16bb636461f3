"""A scripted agent that drives a workflow over MCP reading only the answers.

It stands for the least a real agent does: it starts a workflow, does "the work" its
script describes for each pending step, and sends exactly the call the last answer's
`nextCall` names. When an answer blocks, it reads the blockers, the validation issues and
the `nextCall` (which may carry a ready artifact template) and tries again; when an answer
is a VALIDATION_ERROR naming a missing value, it sends the `details.nextCall` it is handed
with the placeholder replaced. It never builds a token or a call shape of its own, so a
workflow that an agent cannot finish from the answers alone fails here.

The server is the one `workrail mcp` builds (real configuration, discovery, compilation,
files backend), talked to through the SDK's in-memory `Client`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import Client

from workrail.app import build_engine, open_backend
from workrail.config import Overrides, load_config
from workrail.engine.api import Engine
from workrail.mcp import build_server
from workrail.store.memory import MemoryBackend

JsonObject = dict[str, Any]
MUST_CONTAIN_RE = re.compile(r'^- Must contain: "(.*)"$', re.MULTILINE)
PLACEHOLDER_RE = re.compile(r"^<.*>$")


@dataclass(frozen=True, slots=True)
class Output:
    """What the agent sends for one step: notes, a context delta, artifacts.

    `artifacts` are added after any artifact the answer's nextCall already carries; one
    that fills in a template the nextCall carries (same kind, and the same assessmentId or
    loopId when it names one) replaces that template.
    """

    notes: str | None = None
    context: Mapping[str, Any] | None = None
    artifacts: Sequence[Any] = ()


@dataclass(frozen=True, slots=True)
class Visit:
    """One pending step as the agent sees it."""

    step_id: str
    title: str
    prompt: str
    visit: int
    """How many times this step id was pending before (loop iterations, retries)."""
    answer: JsonObject
    """The whole answer that made the step pending (or blocked it)."""

    @property
    def blocked(self) -> bool:
        return self.answer.get("kind") == "blocked"

    @property
    def issues(self) -> list[str]:
        validation = self.answer.get("validation") or {}
        return list(validation.get("issues") or [])


Script = Callable[[Visit], Output]
"""Decides the output of a visit; a blocked visit is offered again with the block."""


def notes_meeting_requirements(visit: Visit) -> str:
    """Notes that say what was done and include every `Must contain` value the prompt lists."""
    required = MUST_CONTAIN_RE.findall(visit.prompt)
    lines = [f"Completed '{visit.title}': did what the step asked and checked it."]
    lines += [f"{value}: covered." for value in required]
    return "\n".join(lines)


def default_script(visit: Visit) -> Output:
    return Output(notes=notes_meeting_requirements(visit))


def scripted(
    steps: Mapping[str, Output | Sequence[Output] | Script], fallback: Script = default_script
) -> Script:
    """A script from a table: per step id one output, a list (one per visit, the last
    repeating), or a function; steps not in the table use `fallback`."""

    def script(visit: Visit) -> Output:
        entry = steps.get(visit.step_id)
        if entry is None:
            return fallback(visit)
        if isinstance(entry, Output):
            return entry
        if callable(entry):
            return entry(visit)
        outputs = list(entry)
        return outputs[min(visit.visit, len(outputs) - 1)]

    return script


@dataclass(slots=True)
class Turn:
    tool: str
    arguments: JsonObject
    answer: JsonObject
    is_error: bool


@dataclass(slots=True)
class Run:
    """Everything the agent saw, for assertions."""

    workflow_id: str
    turns: list[Turn] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    """Step ids in the order they were pending (a retry of a blocked step is not repeated)."""
    blocked: list[str] = field(default_factory=list)
    prompts: dict[str, list[str]] = field(default_factory=dict)
    confirmations: list[str] = field(default_factory=list)
    """Steps whose answer asked the agent to wait for the user's confirmation."""
    needed: list[JsonObject] = field(default_factory=list)
    """`details.missing` entries of VALIDATION_ERROR answers the agent supplied."""
    complete: bool = False

    @property
    def last(self) -> JsonObject:
        return self.turns[-1].answer

    def transcript(self) -> str:
        return "\n".join(
            f"{t.tool} -> {'ERROR ' if t.is_error else ''}"
            f"{t.answer.get('kind') or t.answer.get('code')} "
            f"{(t.answer.get('pending') or {}).get('stepId', '')}"
            for t in self.turns
        )


class AgentStuck(AssertionError):
    """The agent could not go on from the answers alone."""


def _fill_missing(missing: JsonObject, value: Any) -> Any:
    return value


class ScriptedAgent:
    """Drives one workflow to completion (or until it is stuck) through `client`."""

    def __init__(
        self,
        client: Client,
        script: Script = default_script,
        *,
        supply: Callable[[JsonObject], Any] | None = None,
        max_calls: int = 400,
        max_retries: int = 3,
    ) -> None:
        self._client = client
        self._script = script
        self._supply = supply or self._default_supply
        self._max_calls = max_calls
        self._max_retries = max_retries

    @staticmethod
    def _default_supply(missing: JsonObject) -> Any:
        """A value for a `details.missing` entry: a loop decision defaults to stop."""
        if missing.get("in") == "artifact":
            return {"kind": "wr.loop_control", "loopId": missing.get("key"), "decision": "stop"}
        raise AgentStuck(f"the script has no value for {json.dumps(missing)}")

    async def call(self, run: Run, tool: str, arguments: JsonObject) -> JsonObject:
        if len(run.turns) >= self._max_calls:
            raise AgentStuck(f"more than {self._max_calls} calls:\n{run.transcript()}")
        result = await self._client.call_tool(tool, arguments)
        text = result.content[0].text if result.content else "{}"  # type: ignore[union-attr]
        answer = json.loads(text)
        assert isinstance(answer, dict), answer
        run.turns.append(Turn(tool, copy.deepcopy(arguments), answer, bool(result.is_error)))
        return answer

    async def run(
        self,
        workflow_id: str,
        context: Mapping[str, Any] | None = None,
        *,
        workspace_path: str | None = None,
        run: Run | None = None,
    ) -> Run:
        """Drive `workflow_id` to completion; pass `run` to keep what was seen when the
        agent gets stuck (AgentStuck is raised with the transcript)."""
        run = run if run is not None else Run(workflow_id)
        arguments: JsonObject = {"workflowId": workflow_id}
        if context is not None:
            arguments["context"] = dict(context)
        if workspace_path is not None:
            arguments["workspacePath"] = workspace_path
        # A start that needs a context value answers as an advance does: supply it.
        answer = await self._send(run, {"tool": "start_workflow", "params": arguments}, Output())
        visits: dict[str, int] = {}
        retries = 0
        while True:
            if answer.get("isComplete"):
                run.complete = True
                return run
            pending = answer.get("pending")
            call = answer.get("nextCall")
            if not isinstance(pending, dict) or not isinstance(call, dict):
                raise AgentStuck(f"no pending step or nextCall:\n{run.transcript()}")
            step_id = str(pending["stepId"])
            blocked = answer.get("kind") == "blocked"
            if blocked:
                run.blocked.append(step_id)
                retries += 1
                if retries > self._max_retries:
                    raise AgentStuck(
                        f"step '{step_id}' still blocked after {self._max_retries} retries:\n"
                        f"{json.dumps(answer.get('blockers'), indent=1)}\n{run.transcript()}"
                    )
            else:
                retries = 0
                run.steps.append(step_id)
                run.prompts.setdefault(step_id, []).append(str(pending.get("prompt", "")))
            if answer.get("nextIntent") == "await_user_confirmation":
                run.confirmations.append(step_id)
            visit = Visit(
                step_id=step_id,
                title=str(pending.get("title", step_id)),
                prompt=str(pending.get("prompt", "")),
                visit=visits.get(step_id, 0),
                answer=answer,
            )
            if not blocked:
                visits[step_id] = visits.get(step_id, 0) + 1
            answer = await self._send(run, call, self._script(visit))

    async def _send(self, run: Run, call: JsonObject, output: Output) -> JsonObject:
        arguments = _with_output(call, output)
        answer = await self.call(run, str(call["tool"]), arguments)
        supplied = 0
        while run.turns[-1].is_error:
            details = answer.get("details") or {}
            again = details.get("nextCall")
            missing = details.get("missing") or []
            if answer.get("code") != "VALIDATION_ERROR" or not isinstance(again, dict):
                raise AgentStuck(f"error answer: {json.dumps(answer)}\n{run.transcript()}")
            supplied += 1
            if supplied > 5:
                raise AgentStuck(f"still missing values: {json.dumps(missing)}")
            run.needed.extend(missing)
            again = _replace_placeholders(again, [self._supply(m) for m in missing], missing)
            answer = await self.call(run, str(again["tool"]), again["params"])
        return answer


async def tool_answer(client: Client, tool: str, arguments: JsonObject) -> JsonObject:
    """The JSON answer of one tool call that must succeed."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    answer = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert isinstance(answer, dict), answer
    return answer


def _with_output(call: JsonObject, output: Output) -> JsonObject:
    """The nextCall's params plus the step's output (templates the call carries first)."""
    params: JsonObject = copy.deepcopy(call.get("params") or {})
    sent: JsonObject = dict(params.get("output") or {})
    if output.notes is not None:
        sent["notesMarkdown"] = output.notes
    own = list(output.artifacts)
    templates = [t for t in sent.get("artifacts") or () if not any(_fills(a, t) for a in own)]
    artifacts = [*templates, *own]
    if artifacts:
        sent["artifacts"] = artifacts
    if sent:
        params["output"] = sent
    if output.context:
        params["context"] = {**(params.get("context") or {}), **output.context}
    return params


def _fills(artifact: Any, template: Any) -> bool:
    """Whether `artifact` is the agent's own version of `template` (a nextCall artifact)."""
    if not (isinstance(artifact, dict) and isinstance(template, dict)):
        return False
    if artifact.get("kind") != template.get("kind"):
        return False
    return all(
        artifact.get(key, template[key]) == template[key]
        for key in ("assessmentId", "loopId")
        if key in template and not PLACEHOLDER_RE.match(str(template[key]))
    )


def _replace_placeholders(
    call: JsonObject, values: Sequence[Any], missing: Sequence[JsonObject]
) -> JsonObject:
    """`call` with each missing value's placeholder replaced by the supplied value."""
    supplied = copy.deepcopy(call)
    params: JsonObject = supplied.setdefault("params", {})
    for entry, value in zip(missing, values, strict=True):
        if entry.get("in") == "context":
            params.setdefault("context", {})[entry["key"]] = value
        else:
            output = params.setdefault("output", {})
            kept = [
                a
                for a in output.get("artifacts") or ()
                if not (
                    isinstance(a, dict)
                    and a.get("loopId") == entry.get("key")
                    and any(isinstance(v, str) and PLACEHOLDER_RE.match(v) for v in a.values())
                )
            ]
            output["artifacts"] = [*kept, value]
    return supplied


def _now() -> datetime:
    return datetime.now(UTC)


@asynccontextmanager
async def workrail_client(
    tmp: Path,
    workflow_dirs: Sequence[Path] = (),
    *,
    include_bundled: bool = False,
    env: Mapping[str, str] | None = None,
    on_disk: bool = False,
) -> AsyncIterator[Client]:
    """The MCP server `workrail mcp` builds, configured for a fresh data directory under
    `tmp` but on the in-memory store (`on_disk`: on the files there), serving the
    workflows of `workflow_dirs` (and the bundled ones if asked)."""
    async with workrail_server(
        tmp, workflow_dirs, include_bundled=include_bundled, env=env, on_disk=on_disk
    ) as (client, _engine):
        yield client


@asynccontextmanager
async def workrail_server(
    tmp: Path,
    workflow_dirs: Sequence[Path] = (),
    *,
    include_bundled: bool = False,
    env: Mapping[str, str] | None = None,
    on_disk: bool = False,
) -> AsyncIterator[tuple[Client, Engine]]:
    """`workrail_client` plus the engine behind it, for looking at what was stored."""
    environment = {
        "WORKFLOW_INCLUDE_BUNDLED": "true" if include_bundled else "false",
        "WORKFLOW_INCLUDE_USER": "false",
        "WORKFLOW_INCLUDE_PROJECT": "false",
        **(env or {}),
    }
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    config = load_config(
        environment,
        Overrides(data_dir=str(tmp / "data"), workflow_dirs=tuple(str(d) for d in workflow_dirs)),
        home=home,
        cwd=tmp,
    ).unwrap()
    # The in-memory store unless the test serves one data directory twice: these runs are
    # about workflows and the agent's path through them, not storage (which the store
    # contract suites cover on every backend).
    backend = open_backend(config).unwrap() if on_disk else MemoryBackend.open(_now)
    engine = build_engine(config, backend).unwrap()
    async with Client(build_server(engine), raise_exceptions=True) as client:
        yield client, engine
