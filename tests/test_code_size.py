"""The package's size limits: a function that keeps growing or a module that gathers every
concept is where the next change goes wrong, so the limits are a gate like ruff and mypy.

Lines are counted from a definition's first line (its decorators excluded) to its last,
docstring and blank lines included: what a reader has to hold at once."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "workrail"

MAX_FUNCTION_LINES = 100
"""No function is longer than this."""
LONG_FUNCTION_LINES = 60
MAX_LONG_FUNCTIONS = 10
"""At most this many functions are longer than LONG_FUNCTION_LINES."""
MAX_MODULE_LINES = 600


def _functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (f"{path.relative_to(PACKAGE.parent)}::{node.name}", node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_function_is_over_the_limit() -> None:
    functions = [f for path in _sources() for f in _functions(path)]
    too_long = sorted((n, name) for name, n in functions if n > MAX_FUNCTION_LINES)
    assert not too_long, f"split these functions (over {MAX_FUNCTION_LINES} lines): {too_long}"
    long = sorted(((n, name) for name, n in functions if n > LONG_FUNCTION_LINES), reverse=True)
    assert len(long) <= MAX_LONG_FUNCTIONS, (
        f"{len(long)} functions are over {LONG_FUNCTION_LINES} lines (at most "
        f"{MAX_LONG_FUNCTIONS} may be); shorten one before adding another: {long}"
    )


def test_no_module_is_over_the_limit() -> None:
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in _sources()}
    too_big = sorted(
        (n, str(path.relative_to(PACKAGE.parent)))
        for path, n in sizes.items()
        if n > MAX_MODULE_LINES
    )
    assert not too_big, f"split these modules by concept (over {MAX_MODULE_LINES} lines): {too_big}"


def test_the_counter_sees_the_package() -> None:
    """The limits above pass vacuously if the walk finds nothing."""
    sources = _sources()
    assert len(sources) > 100
    assert any(name.endswith("::advance") for p in sources for name, _ in _functions(p))
