"""Small builders shared by the workflow tests (imported as a top-level module)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workrail.workflow import CompiledWorkflow, compile_definition


def load_fixture_workflow(fixtures: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((fixtures / "workflows" / f"{name}.json").read_text())
    return data


def make_workflow(steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "id": "test-flow",
        "name": "Test Flow",
        "description": "A workflow built by a test.",
        "version": "1.0.0",
        "steps": steps,
        **extra,
    }


def step(step_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "title": step_id.title(), "prompt": f"Do {step_id}.", **extra}


def compiled(definition: dict[str, Any]) -> CompiledWorkflow:
    return compile_definition(definition).unwrap()


def running_doc(completed: list[str], stack: list[dict[str, Any]], pending: Any) -> dict[str, Any]:
    """An execution snapshot document in the running state, as the engine stores it."""
    return {
        "v": 1,
        "kind": "execution_snapshot",
        "enginePayload": {
            "v": 1,
            "engineState": {
                "kind": "running",
                "completed": {"kind": "set", "values": completed},
                "loopStack": stack,
                "pending": pending,
            },
        },
    }
