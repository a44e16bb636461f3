"""The one error catalogue: every closed code set of the product has an entry for each of
its codes, the catalogue has no entry nobody can produce, and docs/errors.md lists exactly
the catalogue. Failures say exactly what to add where."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import pytest

from workrail.app import StartupCode
from workrail.bundle.errors import BundleError, to_envelope
from workrail.bundle.errors import ErrorCode as BundleCode
from workrail.core.errors import (
    CATALOG,
    FAMILY_TITLES,
    NOT_RETRYABLE,
    CodeSpec,
    Family,
    Retry,
    envelope,
    markdown_row,
    retry_after_ms,
    retry_of,
    spec_of,
    suggestion_of,
)
from workrail.engine.errors import EngineError
from workrail.engine.errors import ErrorCode as EngineCode
from workrail.fence.errors import ERROR_CATALOG, FenceError
from workrail.fence.errors import ErrorCode as FenceCode
from workrail.tokens.errors import TokenErrorCode

DOCS = Path(__file__).resolve().parents[2] / "docs" / "errors.md"

# Each closed set, where it lives, and the family its codes belong to (None: any family,
# for sets that reuse codes owned elsewhere).
CLOSED_SETS: list[tuple[str, tuple[str, ...], Family | None]] = [
    ("ErrorCode in workrail/engine/errors.py", get_args(EngineCode), "engine"),
    ("TokenErrorCode in workrail/tokens/errors.py", get_args(TokenErrorCode), "engine"),
    ("ErrorCode in workrail/fence/errors.py", get_args(FenceCode), "fence"),
    ("ErrorCode in workrail/bundle/errors.py", get_args(BundleCode), "bundle"),
    ("StartupCode in workrail/app.py", get_args(StartupCode), None),
]


def _entry_template(code: str, family: Family) -> str:
    return (
        f'    "{code}": _{family}(<HTTP status>, "<what the caller should do next>"'
        ", retry=<NOT_RETRYABLE | RETRY_NOW | retry_after_ms(N)>, input_fault=<True|False>),"
    )


@pytest.mark.parametrize(("where", "codes", "family"), CLOSED_SETS, ids=lambda v: str(v)[:24])
def test_every_code_of_a_closed_set_is_in_the_catalogue(
    where: str, codes: tuple[str, ...], family: Family | None
) -> None:
    missing = [c for c in codes if c not in CATALOG]
    assert not missing, (
        f"{where} has {missing} but the catalogue does not. Add to CATALOG in "
        "workrail/core/errors.py (its section for this family):\n"
        + "\n".join(_entry_template(c, family or "startup") for c in missing)
        + "\nthen the row tests/core/test_errors.py::test_docs_table_is_the_catalogue prints "
        "to docs/errors.md."
    )
    if family is not None:
        wrong = {c: CATALOG[c].family for c in codes if CATALOG[c].family != family}
        assert not wrong, f"{where}: these codes belong to family {family!r}, not {wrong}"


def test_every_catalogue_entry_is_produced_by_some_closed_set() -> None:
    produced = {code for _, codes, _ in CLOSED_SETS for code in codes}
    dead = sorted(set(CATALOG) - produced)
    assert not dead, (
        f"The catalogue has {dead}, which no closed set can produce: add each to the Literal "
        "of the part that sends it, or remove it from workrail/core/errors.py and docs/errors.md."
    )


_ROW = re.compile(r"^\| `(?P<code>[A-Z0-9_]+)` \|")


def _doc_tables() -> dict[str, list[str]]:
    """The docs' rows, by the `### ` heading they stand under."""
    tables: dict[str, list[str]] = {}
    heading = ""
    for line in DOCS.read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
        elif _ROW.match(line):
            tables.setdefault(heading, []).append(line.rstrip())
    return tables


def test_docs_table_is_the_catalogue() -> None:
    docs = _doc_tables()
    for family, title in FAMILY_TITLES.items():
        want = [markdown_row(c, s) for c, s in CATALOG.items() if s.family == family]
        have = docs.get(title, [])
        missing = [row for row in want if row not in have]
        extra = [row for row in have if row not in want]
        assert (missing, extra) == ([], []), (
            f"docs/errors.md, table under '### {title}', must list the catalogue exactly.\n"
            + (
                "Add (or replace the old row with):\n" + "\n".join(missing) + "\n"
                if missing
                else ""
            )
            + ("Remove:\n" + "\n".join(extra) if extra else "")
        )
        assert have == want, f"docs/errors.md '### {title}': rows out of the catalogue's order"
    assert set(docs) <= set(FAMILY_TITLES.values()), f"unexpected tables: {set(docs)}"


@pytest.mark.parametrize(("code", "spec"), list(CATALOG.items()), ids=list(CATALOG))
def test_each_entry_is_usable(code: str, spec: CodeSpec) -> None:
    assert spec.suggestion.strip(), code
    assert spec.suggestion.rstrip()[-1] in ".)", code
    assert 400 <= spec.http_status < 600, code
    if spec.retry.retryable:
        assert spec.http_status >= 409, code
        assert not spec.input_fault, code
    assert (spec.retry.kind == "retryable_after_ms") == (spec.retry.after_ms is not None)


def test_the_envelope_fills_in_the_catalogue_defaults() -> None:
    got = envelope("TOKEN_SESSION_LOCKED", "busy")
    assert got == {
        "code": "TOKEN_SESSION_LOCKED",
        "message": "busy",
        "retry": {"kind": "retryable_after_ms", "afterMs": 1000},
        "details": {"suggestion": CATALOG["TOKEN_SESSION_LOCKED"].suggestion},
    }
    own = envelope("NOT_FOUND", "gone", "Look elsewhere.", retry=NOT_RETRYABLE, details={"x": 1})
    assert own["details"] == {"suggestion": "Look elsewhere.", "x": 1}
    assert retry_of(got) == retry_after_ms(1000)
    assert suggestion_of(own) == "Look elsewhere."
    assert retry_of({"code": "STORE_UNAVAILABLE"}) == CATALOG["STORE_UNAVAILABLE"].retry
    assert suggestion_of({"code": "NO_SUCH"}) == CATALOG["INTERNAL_ERROR"].suggestion
    assert spec_of("NO_SUCH") is CATALOG["INTERNAL_ERROR"]


def test_retry_has_one_spelling_and_the_contract_spellings_derive_from_it() -> None:
    assert Retry("retryable_after_ms", 1500).after_seconds == 2  # rounded up, never 0
    assert Retry("retryable_after_ms", 1).after_seconds == 1
    assert NOT_RETRYABLE.to_json() == {"kind": "not_retryable"}
    for code, view in ERROR_CATALOG.items():
        assert view.retryable == CATALOG[code].retry.retryable
        assert view.recovery == CATALOG[code].suggestion
    paused: Any = FenceError("TOOL_PAUSED", "paused", retry_after_seconds=30).envelope()
    error = paused["error"]
    assert error["retry"] == {"kind": "retryable_after_ms", "afterMs": 30000}
    assert (error["retryable"], error["retry_after_seconds"]) == (True, 30)
    assert error["details"]["suggestion"] == error["recovery"]
    bad = BundleError("BUNDLE_INTEGRITY_FAILED", "changed", "integrity/entries/0")
    assert bad.to_json()["retry"] == "no"
    wire = to_envelope(bad)
    assert wire["retry"] == {"kind": "not_retryable"}
    assert wire["details"]["path"] == bad.path


def test_an_engine_error_without_its_own_guidance_gets_the_catalogues() -> None:
    err = EngineError("STORE_UNAVAILABLE", "down")
    assert err.to_envelope()["retry"] == {"kind": "retryable_after_ms", "afterMs": 2000}
