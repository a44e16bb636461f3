"""Condition operators with the reference's lenient JavaScript-like comparisons."""

from __future__ import annotations

from typing import Any

import pytest

from workrail.workflow.conditions import evaluate_condition, lenient_equals
from workrail.workflow.jsvalues import compile_js_regex, js_number, js_string

CTX: dict[str, Any] = {
    "mode": " Full ",
    "n": 5,
    "f": 2.5,
    "s12": " 12 ",
    "flag": True,
    "yes": "yes",
    "zero": 0,
    "empty": "",
    "none": None,
    "items": ["a", "b"],
    "obj": {"k": 1},
    "text": "Hello World",
}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (None, True),
        ({}, True),
        ("not an object", True),
        ({"var": "mode"}, True),
        ({"var": "missing"}, False),
        ({"var": "zero"}, False),
        ({"var": "empty"}, False),
        ({"var": "none"}, False),
        ({"var": "items"}, True),
        ({"var": "obj"}, True),
        ({"var": "mode", "equals": "full"}, True),
        ({"var": "mode", "equals": "lite"}, False),
        ({"var": "s12", "equals": 12}, True),
        ({"var": "n", "equals": "5"}, True),
        ({"var": "n", "equals": "five"}, False),
        ({"var": "yes", "equals": True}, True),
        ({"var": "flag", "equals": "TRUE"}, True),
        ({"var": "flag", "equals": 1}, False),
        ({"var": "missing", "equals": None}, True),
        ({"var": "none", "equals": "null"}, False),
        ({"var": "items", "equals": ["a", "b"]}, False),
        ({"var": "mode", "not_equals": "lite"}, True),
        ({"var": "missing", "not_equals": True}, True),
        ({"var": "n", "gt": 4}, True),
        ({"var": "n", "gt": 5}, False),
        ({"var": "n", "gte": 5}, True),
        ({"var": "f", "lt": 3}, True),
        ({"var": "f", "lte": 2.5}, True),
        ({"var": "s12", "gt": 1}, False),
        ({"var": "text", "contains": "WORLD"}, True),
        ({"var": "items", "contains": "a,b"}, True),
        ({"var": "text", "startsWith": " hello"}, True),
        ({"var": "text", "endsWith": "world"}, True),
        ({"var": "none", "contains": ""}, True),
        ({"var": "text", "matches": "^hello\\s+w"}, True),
        ({"var": "text", "matches": "(unclosed"}, False),
        ({"var": "n", "matches": "^5$"}, True),
        ({"and": [{"var": "flag"}, {"var": "n", "gt": 1}]}, True),
        ({"and": [{"var": "flag"}, {"var": "zero"}]}, False),
        ({"and": "not-a-list"}, False),
        ({"or": [{"var": "zero"}, {"var": "n"}]}, True),
        ({"or": []}, False),
        ({"not": {"var": "zero"}}, True),
        ({"unknown": 1}, False),
        ({"var": "mode", "equals": "full", "not_equals": "full"}, True),
    ],
)
def test_condition_table(condition: Any, expected: bool) -> None:
    assert evaluate_condition(condition, CTX) is expected


def test_deep_nesting_is_false_not_a_crash() -> None:
    condition: dict[str, Any] = {"var": "flag"}
    for _ in range(5000):
        condition = {"not": condition}
    assert evaluate_condition(condition, CTX) in (True, False)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "true"),
        (1.0, "1"),
        (1e21, "1e+21"),
        (0.1, "0.1"),
        ([1, None, "x"], "1,,x"),
        ({"a": 1}, "[object Object]"),
    ],
)
def test_js_string(value: Any, text: str) -> None:
    assert js_string(value) == text


@pytest.mark.parametrize(
    ("text", "number"), [("", 0.0), (" 12 ", 12.0), ("0x10", 16.0), ("1e3", 1000.0)]
)
def test_js_number(text: str, number: float) -> None:
    assert js_number(text) == number


def test_js_number_nan_and_equality_edges() -> None:
    assert js_number("12px") != js_number("12px")  # NaN
    assert lenient_equals(None, None)
    assert not lenient_equals({"a": 1}, {"a": 1})


def test_js_regex_dialect() -> None:
    named = compile_js_regex(r"(?<word>\w+)-\k<word>")
    assert named is not None
    assert named.search("ab-ab")
    assert compile_js_regex("a", "x") is None
    assert compile_js_regex("a", "gg") is None
    insensitive = compile_js_regex("abc", "gi")
    assert insensitive is not None
    assert insensitive.search("xABCx")


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"var": "mode", "in": ["full", "lite"]}, True),  # forgiving, like equals
        ({"var": "mode", "in": ["lite"]}, False),
        ({"var": "s12", "in": [12]}, True),
        ({"var": "flag", "in": ["yes"]}, True),
        ({"var": "missing", "in": [None]}, True),
        ({"var": "missing", "in": ["x"]}, False),
        ({"var": "mode", "in": "full"}, False),  # not a list of candidates
        ({"var": "mode", "in": []}, False),
        ({"not": {"var": "mode", "in": ["lite"]}}, True),
        ({"var": "items", "contains": "B"}, True),  # an array's text form
        ({"var": "items", "contains": "c"}, False),
        ({"var": "text", "contains": " world"}, True),
        ({"var": "missing", "contains": "x"}, False),
    ],
)
def test_in_and_contains(condition: Any, expected: bool) -> None:
    assert evaluate_condition(condition, CTX) is expected
