"""Which of WorkRail's two languages a pinned definition is written in.

A file that uses nothing beyond WorkRail v1.4's format runs exactly as it always has (the
reference-compatibility rules). A file that uses anything of the current language
(v3.x) gets the current language's rules as well: every step without an output contract
needs notes unless it sets `notesOptional`, and blocked answers carry artifact templates
for loop control too. Decided once per pinned definition, from its JSON alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from workrail.workflow.conditions import condition_nodes

V14_WORKFLOW_KEYS: Final = frozenset(
    {
        "id",
        "name",
        "description",
        "version",
        "preconditions",
        "clarificationPrompts",
        "metaGuidance",
        "steps",
        "functionDefinitions",
        "recommendedPreferences",
    }
)
V14_STEP_KEYS: Final = frozenset(
    {
        "id",
        "title",
        "prompt",
        "agentRole",
        "guidance",
        "askForFiles",
        "hasValidation",
        "requireConfirmation",
        "runCondition",
        "validationCriteria",
        "outputContract",
        "functionDefinitions",
        "functionCalls",
        "functionReferences",
    }
)
V14_LOOP_KEYS: Final = frozenset(
    {
        "id",
        "type",
        "title",
        "loop",
        "body",
        "functionDefinitions",
        "requireConfirmation",
        "runCondition",
    }
)
V14_LOOP_CONFIG_KEYS: Final = frozenset(
    {
        "type",
        "condition",
        "items",
        "count",
        "maxIterations",
        "iterationVar",
        "itemVar",
        "indexVar",
        "conditionSource",
    }
)
V14_CONDITION_KEYS: Final = frozenset(
    {"var", "equals", "not_equals", "gt", "gte", "lt", "lte", "and", "or", "not"}
)
V14_CONTRACT: Final = "wr.contracts.loop_control"
_MAX_NODES: Final = 100_000


def uses_current_language(definition: Mapping[str, Any]) -> bool:
    """True when any part of `definition` is outside WorkRail v1.4's format."""
    if not set(definition) <= V14_WORKFLOW_KEYS:
        return True
    steps = definition.get("steps")
    if not isinstance(steps, list):
        return False
    return any(_step_is_current(step) for step in steps)


def _step_is_current(step: Any) -> bool:
    if not isinstance(step, dict):
        return False
    if step.get("type") == "loop":
        if not set(step) <= V14_LOOP_KEYS:
            return True
        if _loop_config_is_current(step.get("loop")):
            return True
        body = step.get("body")
        if isinstance(body, list) and any(_step_is_current(s) for s in body):
            return True
    elif not set(step) <= V14_STEP_KEYS:
        return True
    declared = step.get("outputContract")
    if isinstance(declared, dict) and declared.get("contractRef") != V14_CONTRACT:
        return True  # v1.4 knew loop control only
    if _confirmation_is_current(step.get("requireConfirmation")):
        return True
    return _condition_is_current(step.get("runCondition"))


def _loop_config_is_current(config: Any) -> bool:
    if not isinstance(config, dict):
        return False
    if not set(config) <= V14_LOOP_CONFIG_KEYS:
        return True
    if config.get("type") in ("while", "until") and "condition" not in config:
        return True
    source = config.get("conditionSource")
    if (
        isinstance(source, dict)
        and source.get("kind") == "artifact_contract"
        and "loopId" not in source
    ):
        return True
    if isinstance(source, dict) and _condition_is_current(source.get("condition")):
        return True
    return _condition_is_current(config.get("condition"))


def _confirmation_is_current(rule: Any) -> bool:
    if isinstance(rule, dict):
        return "kind" in rule or _condition_is_current(rule)
    return False


def _condition_is_current(condition: Any) -> bool:
    return any(
        not set(node) <= V14_CONDITION_KEYS for node in condition_nodes(condition, _MAX_NODES)
    )
