"""An agent's omission answered as such: a loop that needs a context value or a
`wr.loop_control` artifact the call did not supply is a VALIDATION_ERROR that names the
value, its expected type and carries a `nextCall` supplying it (a placeholder to
replace), never an INTERNAL_ERROR. Nothing is written, so the same ack can be sent again.
"""

from __future__ import annotations

import copy
from typing import Any

from workrail.engine.errors import EngineError
from workrail.workflow.errors import NeededInput, WorkflowError


def with_input(call: dict[str, Any] | None, needs: NeededInput) -> dict[str, Any] | None:
    """`call` (a `{tool, params}` nextCall) with the needed value added: the context key
    set to its placeholder, or the loop-control artifact appended to `output.artifacts`."""
    if call is None:
        return None
    supplied = copy.deepcopy(call)
    params: dict[str, Any] = supplied.setdefault("params", {})
    if needs.source == "context":
        context = dict(params.get("context") or {})
        context[needs.key] = needs.placeholder
        params["context"] = context
    else:
        output = dict(params.get("output") or {})
        output["artifacts"] = [*(output.get("artifacts") or ()), needs.placeholder]
        params["output"] = output
    return supplied


def needed_input_error(failure: WorkflowError, call: dict[str, Any] | None) -> EngineError:
    """The answer to an advance or start that cannot go on without `failure.needs`."""
    needs = failure.needs
    assert needs is not None
    if needs.source == "context":
        what = f"context.{needs.key} must be {_article(needs.expected)}, but {needs.problem}"
        how = (
            f"Send the call again with context.{needs.key} set to {_article(needs.expected)}, "
            f"which {needs.needed_by} reads. nextCall is that call with a placeholder in "
            "place of the value: replace it with the real one. Nothing was recorded."
        )
    else:
        what = f"{needs.needed_by} needs a {needs.expected} with loopId '{needs.key}'"
        how = (
            "Send the call again with a wr.loop_control artifact in output.artifacts "
            f'(loopId \'{needs.key}\', decision "continue" or "stop"): nextCall is that '
            "call; replace the decision placeholder. Nothing was recorded."
        )
    return EngineError(
        "VALIDATION_ERROR",
        f"The workflow needs a value this call did not supply: {what}.",
        details={
            "suggestion": how,
            "validationErrors": [{"path": needs.path(), "message": failure.message}],
            "missing": [needs.to_json()],
            "nextCall": with_input(call, needs),
        },
    )


def _article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"
