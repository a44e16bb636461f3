"""The validation engine (50-workflows §8): checks `notesMarkdown` against a step's
`validationCriteria`. An invalid regex is an engine error (the reference reports it as an
internal failure), everything else is a valid/invalid result with readable issues.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft7Validator
from jsonschema.exceptions import SchemaError
from returns.result import Failure, Result, Success

from workrail.workflow.conditions import evaluate_condition
from workrail.workflow.errors import WorkflowError
from workrail.workflow.jsvalues import compile_js_regex, is_number
from workrail.workflow.outcomes import REVIEW_SUGGESTION, ValidationResult

EMPTY_OUTPUT_ISSUE = "Output is empty or invalid."
EMPTY_OUTPUT_SUGGESTION = "Provide valid output content."
COMPOSITION_FAILED = "Validation composition failed"


def validate_output(
    criteria: Any, text: str, context: Mapping[str, Any]
) -> Result[ValidationResult, WorkflowError]:
    """Validate agent notes against criteria (array of rules or a composition)."""
    if isinstance(criteria, list):
        if not criteria:
            if text.strip():
                return Success(ValidationResult(valid=True))
            return Success(
                ValidationResult(
                    valid=False, issues=[EMPTY_OUTPUT_ISSUE], suggestions=[EMPTY_OUTPUT_SUGGESTION]
                )
            )
        issues: list[str] = []
        for rule in criteria:
            if isinstance(rule, dict) and not evaluate_condition(rule.get("condition"), context):
                continue
            outcome = _rule_issue(rule, text)
            if isinstance(outcome, WorkflowError):
                return Failure(outcome)
            if outcome is not None:
                issues.append(outcome)
        if issues:
            return Success(
                ValidationResult(valid=False, issues=issues, suggestions=[REVIEW_SUGGESTION])
            )
        return Success(ValidationResult(valid=True))
    passed = _composition_passes(criteria, text, context)
    if isinstance(passed, WorkflowError):
        return Failure(passed)
    if passed:
        return Success(ValidationResult(valid=True))
    return Success(
        ValidationResult(valid=False, issues=[COMPOSITION_FAILED], suggestions=[REVIEW_SUGGESTION])
    )


def _composition_passes(node: Any, text: str, context: Mapping[str, Any]) -> bool | WorkflowError:
    if not isinstance(node, dict) or not node:
        return True
    if "and" in node or "or" in node:
        op = "and" if "and" in node else "or"
        parts = node[op] if isinstance(node[op], list) else []
        results: list[bool] = []
        for part in parts:
            r = _composition_passes(part, text, context)
            if isinstance(r, WorkflowError):
                return r
            results.append(r)
        return all(results) if op == "and" else any(results)
    if "not" in node:
        r = _composition_passes(node["not"], text, context)
        return r if isinstance(r, WorkflowError) else not r
    if not evaluate_condition(node.get("condition"), context):
        return True
    outcome = _rule_issue(node, text)
    return outcome if isinstance(outcome, WorkflowError) else outcome is None


def _rule_issue(rule: Any, text: str) -> str | None | WorkflowError:
    """The issue text when a rule fails, `None` when it passes."""
    if not isinstance(rule, dict):
        return None
    message = rule.get("message") if isinstance(rule.get("message"), str) else None
    kind = rule.get("type")
    if kind == "contains":
        value = rule.get("value")
        ok = isinstance(value, str) and value in text
        return None if ok else message or f"Output must contain: {value}"
    if kind == "regex":
        pattern, flags = rule.get("pattern"), rule.get("flags", "")
        regex = (
            compile_js_regex(pattern, flags)
            if isinstance(pattern, str) and isinstance(flags, str)
            else None
        )
        if regex is None:
            return WorkflowError(
                "VALIDATION_ENGINE_ERROR",
                f"invalid regular expression /{pattern}/{flags} in validationCriteria; "
                "fix the workflow and start a new run",
            )
        return None if regex.search(text) else message or f"Output must match pattern: {pattern}"
    if kind == "length":
        length = len(text.encode("utf-16-le")) // 2
        low, high = rule.get("min"), rule.get("max")
        if low is not None and is_number(low) and length < low:
            return message or f"Output must be at least {low} characters"
        if high is not None and is_number(high) and length > high:
            return message or f"Output must be at most {high} characters"
        return None
    if kind == "schema":
        return _schema_issue(rule.get("schema"), text, message)
    return None


def _schema_issue(schema: Any, text: str, message: str | None) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return message or "Output is not valid JSON"
    expects_container = isinstance(schema, dict) and schema.get("type") in ("object", "array")
    if expects_container and isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if not isinstance(schema, dict):
        return None
    try:
        errors = list(Draft7Validator(schema).iter_errors(value))
    except SchemaError:
        return message or "Validation schema is invalid"
    if not errors:
        return None
    if message:
        return message
    return "; ".join(
        f"Validation Error at '/{'/'.join(str(p) for p in e.absolute_path)}': {e.message}"
        for e in errors
    )
