"""How every command reports a failure: the catalogue's envelope under --json, else the code,
the message and a `Next:` line on stderr; the exit status says whose fault it was."""

from __future__ import annotations

import argparse
import io
import json

from workrail.cli.context import Cli
from workrail.core.errors import CATALOG, envelope


def _cli(*, as_json: bool) -> tuple[Cli, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Cli(argparse.Namespace(json=as_json), {}, out, err), out, err


def test_a_failure_ends_with_what_to_do_next_and_when_to_retry() -> None:
    cli, out, err = _cli(as_json=False)
    assert cli.fail(envelope("TOKEN_SESSION_LOCKED", "Session is locked.")) == 1
    first, second = err.getvalue().splitlines()
    assert first == "TOKEN_SESSION_LOCKED: Session is locked."
    suggestion = CATALOG["TOKEN_SESSION_LOCKED"].suggestion
    assert second == f"  Next: {suggestion} (retryable after 1 s)"
    assert out.getvalue() == ""


def test_bad_input_exits_2_and_an_envelope_without_a_suggestion_gets_the_default() -> None:
    cli, _, err = _cli(as_json=False)
    assert cli.fail({"code": "NOT_FOUND", "message": "No such workflow."}) == 2
    assert err.getvalue().splitlines()[-1] == f"  Next: {CATALOG['NOT_FOUND'].suggestion}"


def test_json_failures_are_the_envelope_under_error() -> None:
    cli, out, err = _cli(as_json=True)
    sent = envelope("STORE_UNAVAILABLE", "down")
    assert cli.fail(sent) == 1
    assert json.loads(out.getvalue()) == {"ok": False, "error": sent}
    assert err.getvalue() == ""


def test_a_long_message_is_never_wrapped_mid_line() -> None:
    cli, _, err = _cli(as_json=False)
    cli.fail(envelope("VALIDATION_ERROR", "x" * 300))
    assert err.getvalue().splitlines()[0] == "VALIDATION_ERROR: " + "x" * 300
