"""The `workrail` command: configuration flags, sessions list/show, keys rotate, wiring."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE
from tests.engine.conftest import make_engine
from tests.services.postgres import free_port
from workrail.cli import build_parser, main
from workrail.cli.context import Cli
from workrail.core.canonical import canonical_bytes


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WORKRAIL_DATA_DIR", str(tmp_path / "unused"))
    monkeypatch.setenv("WORKFLOW_STORAGE_PATH", "")
    monkeypatch.delenv("WORKRAIL_STORE_URL", raising=False)


def _walk(data_dir: Path) -> str:
    """One session: start, advance once, checkpoint, then advance the checkpointed node."""
    engine = make_engine(data_dir)
    r = engine.start_workflow("probe-flow", {}).unwrap()
    r = engine.advance(r["stateToken"], r["ackToken"], notes_markdown="the plan").unwrap()
    engine.checkpoint(r["checkpointToken"]).unwrap()
    engine.advance(r["stateToken"], r["ackToken"], notes_markdown="built it").unwrap()
    (sid,) = os.listdir(data_dir / "sessions")
    return sid


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return json.loads(capsys.readouterr().out)


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "mcp" in capsys.readouterr().out


def test_all_commands_are_wired() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    names = set(sub.choices)  # type: ignore[arg-type]
    assert {"mcp", "demo", "validate", "workflows", "sessions", "keys"} <= names
    assert {"export", "import", "fence", "checkpoint", "serve"} <= names


def _config_of(argv: list[str], env: dict[str, str]) -> Any:
    return Cli(build_parser().parse_args(argv), env).config


def test_flags_configure_the_command_without_touching_the_environment(tmp_path: Path) -> None:
    before = dict(os.environ)
    env = {"WORKFLOW_STORAGE_PATH": str(tmp_path / "w0"), "WORKRAIL_DATA_DIR": "/elsewhere"}
    argv = ["--data-dir", str(tmp_path / "d"), "--workflows", str(tmp_path / "w1"), "sessions"]
    config = _config_of([*argv, "--workflows", str(tmp_path / "w2")], env)
    assert config.data_dir == tmp_path / "d"
    assert config.store_url is None
    custom = [s.directory for s in config.discovery.sources() if s.origin == "custom"]
    assert custom == [tmp_path / "w0", tmp_path / "w1", tmp_path / "w2"]
    assert dict(os.environ) == before


@pytest.mark.parametrize("where", ["before", "after"])
def test_global_flags_work_before_or_after_the_subcommand(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--data-dir", str(tmp_path / "d"), "--store", "postgresql://u@localhost/db", "--json"]
    argv = [*flags, "sessions"] if where == "before" else ["sessions", *flags]
    config = _config_of(argv, {})
    assert config.data_dir == tmp_path / "d"
    assert config.store_url == "postgresql://u@localhost/db"
    assert build_parser().parse_args(argv).json is True


@pytest.mark.parametrize("command", [["sessions"], ["sessions", "show", "sess_qmx"]])
def test_a_data_dir_that_cannot_be_read_says_to_check_it(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sessions").write_text("not a directory")
    assert main([*command, "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("STORE_UNAVAILABLE")
    assert "Not a directory" in err
    assert "needs a person to check it" in err
    assert "invariant" not in err
    assert "server log" not in err
    assert "Traceback" not in err


def test_a_bad_store_url_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "--store", "mysql://root:hunter2@db/x"]) == 2
    err = capsys.readouterr().err
    assert "CONFIG_INVALID" in err
    assert "--store" in err
    assert "hunter2" not in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "url",
    ["postgresql://alice:hunter2@[bad/db", "postgresql://alice:hunter2@db/x?colour=blue"],
)
def test_a_malformed_postgres_url_is_a_config_error(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sessions", "--store", url]) == 2
    err = capsys.readouterr().err
    assert "CONFIG_INVALID" in err
    assert "libpq" in err
    assert "hunter2" not in err
    assert "Traceback" not in err
    assert "retry" not in err.lower()


@pytest.mark.parametrize(
    ("command", "port"), [("console", "99999"), ("serve", "-5"), ("mcp", "abc")]
)
def test_a_port_out_of_range_is_a_usage_error(
    command: str, port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "--http", "--port", port] if command == "mcp" else [command, "--port", port]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--port" in err
    assert "0-65535" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", [["sessions"], ["keys", "rotate"], ["export", "sess_x"]])
def test_an_unreachable_postgres_is_one_line_and_exit_1(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://team:hunter2@127.0.0.1:{free_port()}/workrail"
    assert main([*command, "--store", url]) == 1
    err = capsys.readouterr().err
    assert "STORE_UNAVAILABLE" in err
    assert "Cannot reach PostgreSQL" in err
    assert "hunter2" not in err
    assert "Traceback" not in err
    # advice for a person starting a command, not the agents' "send the same call again"
    assert "run the command again" in err
    assert "same call" not in err


def test_mcp_accepts_config_flags_after_the_subcommand(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        ["mcp", "--http", "--port", "9", "--data-dir", str(tmp_path), "--log-level", "debug"]
    )
    assert args.http
    assert args.port == 9
    assert args.host == "127.0.0.1"
    assert args.data_dir == str(tmp_path)
    assert args.log_level == "DEBUG"


def test_sessions_list_json(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _walk(data_dir)
    assert main(["--data-dir", str(data_dir), "sessions", "--json"]) == 0
    (row,) = _json(capsys)["sessions"]
    assert row["sessionId"] == sid
    assert row["workflowId"] == "probe-flow"
    assert row["status"] == "in_progress"
    assert row["health"] == "healthy"
    assert row["progress"] == {"done": 2, "known": 3}
    assert row["title"] == "the plan"
    assert row["lastActivity"]


def test_sessions_list_human(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _walk(data_dir)
    assert main(["--data-dir", str(data_dir), "sessions"]) == 0
    out = capsys.readouterr().out
    assert sid in out
    assert "probe-flow" in out


def test_sessions_show_json_has_dag(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _walk(data_dir)
    assert main(["--data-dir", str(data_dir), "sessions", "show", sid, "--json"]) == 0
    (run,) = _json(capsys)["runs"]
    kinds = sorted(n["nodeKind"] for n in run["nodes"])
    assert kinds == ["checkpoint", "step", "step", "step"]
    fork = [n for n in run["nodes"] if len(n["children"]) == 2]
    assert len(fork) == 1
    assert fork[0]["pendingStepId"] == "build"
    assert {e["edgeKind"] for e in run["edges"]} == {"acked_step", "checkpoint"}
    notes = [note for n in run["nodes"] for note in n["notes"]]
    assert notes == ["the plan", "built it"]
    assert run["preferredTip"] in run["tips"]


def test_sessions_show_tree(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _walk(data_dir)
    assert main(["--data-dir", str(data_dir), "sessions", "show", sid]) == 0
    out = capsys.readouterr().out
    for text in ("checkpoint", "fork", "preferred tip", "notes:", "the plan"):
        assert text in out


@pytest.mark.parametrize("columns", ["44", "200"])
def test_sessions_show_prints_every_id_whole_at_any_width(
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    columns: str,
) -> None:
    sid = _walk(data_dir)
    assert main(["--data-dir", str(data_dir), "sessions", "show", sid, "--json"]) == 0
    (run,) = _json(capsys)["runs"]
    ids = [sid, run["runId"], *(n["nodeId"] for n in run["nodes"])]
    monkeypatch.setenv("COLUMNS", columns)
    assert main(["--data-dir", str(data_dir), "sessions", "show", sid]) == 0
    out = capsys.readouterr().out
    missing = [i for i in ids if i not in out]
    assert not missing, f"cut or wrapped at {columns} columns: {missing}\n{out}"


def test_sessions_show_unknown(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data-dir", str(data_dir), "sessions", "show", "sess_nope", "--json"]) == 2
    assert _json(capsys)["error"]["code"] == "NOT_FOUND"


def test_keys_rotate_keeps_old_tokens_valid(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = make_engine(data_dir)
    r = engine.start_workflow("probe-flow", {}).unwrap()
    before = (data_dir / "keys" / "keyring.json").read_bytes()
    assert main(["--data-dir", str(data_dir), "keys", "rotate", "--json"]) == 0
    assert _json(capsys)["rotated"] is True
    assert (data_dir / "keys" / "keyring.json").read_bytes() != before
    # A restarted engine (new keyring) still accepts the token signed by the previous key.
    assert make_engine(data_dir).rehydrate(r["stateToken"]).unwrap()["pending"]["stepId"] == "plan"
    assert main(["--data-dir", str(data_dir), "keys", "rotate"]) == 0
    said = capsys.readouterr().out.strip()
    assert str(data_dir) in said
    assert said.endswith("until the next rotation.")


# --- checkpoint records -----------------------------------------------------------------


@pytest.fixture
def reference_workflows(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Flags that make the CLI's discovered catalog the reference workflows only."""
    monkeypatch.setenv("WORKFLOW_INCLUDE_USER", "false")
    monkeypatch.setenv("WORKFLOW_INCLUDE_PROJECT", "false")
    return ["--workflows", str(REFERENCE / "workflows")]


@pytest.fixture
def at_build(data_dir: Path, reference_workflows: list[str]) -> tuple[dict[str, Any], list[str]]:
    """A probe-flow session in the data directory, advanced to its build step, and the
    flags that point the CLI at it."""
    engine = make_engine(data_dir)
    r = engine.start_workflow("probe-flow", {"ticket": "T-1"}).unwrap()
    built: dict[str, Any] = engine.advance(
        r["stateToken"], r["ackToken"], notes_markdown="plan"
    ).unwrap()
    return built, ["--data-dir", str(data_dir), *reference_workflows]


def test_checkpoint_export_and_resume(
    at_build: tuple[dict[str, Any], list[str]],
    tmp_path: Path,
    reference_workflows: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    built, flags = at_build
    assert main([*flags, "checkpoint", "export", built["checkpointToken"]]) == 0
    record = _json(capsys)
    assert record["completed"] == ["plan"]
    assert "T-1" not in json.dumps(record)

    out = tmp_path / "record.json"
    args = ["checkpoint", "export", built["checkpointToken"], "-o", str(out), "--json"]
    assert main([*flags, *args]) == 0
    assert _json(capsys)["record"] == record
    assert out.read_bytes() == canonical_bytes(record)

    context = tmp_path / "context.json"
    context.write_text('{"ticket": "T-1"}')
    elsewhere = ["--data-dir", str(tmp_path / "elsewhere"), *reference_workflows]
    resume = ["checkpoint", "resume", str(out), "--context", str(context), "--json"]
    assert main([*elsewhere, *resume]) == 0
    resumed = _json(capsys)
    assert resumed["pending"] == built["pending"]
    assert {"stateToken", "ackToken", "checkpointToken"} <= set(resumed)

    assert main([*elsewhere, "checkpoint", "resume", str(out), "--context", str(context)]) == 0
    text = capsys.readouterr().out
    assert "build" in text
    # A person's summary names the new session and the one token an agent needs, first.
    session = re.search(r"Resumed in a new session (sess_\w+)\.", text)
    assert session is not None, text
    tokens = [line.split(":")[0].strip() for line in text.splitlines() if line.startswith("  ")]
    assert tokens[0] == "continueToken", text


def test_checkpoint_resume_mismatches_exit_2(
    at_build: tuple[dict[str, Any], list[str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    built, flags = at_build
    out = tmp_path / "record.json"
    assert main([*flags, "checkpoint", "export", built["checkpointToken"], "-o", str(out)]) == 0
    capsys.readouterr()

    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"ticket": "T-2"}')
    resume = ["checkpoint", "resume", str(out), "--context", str(wrong), "--json"]
    assert main([*flags, *resume]) == 2
    assert _json(capsys)["error"]["code"] == "CHECKPOINT_CONTEXT_MISMATCH"

    changed = tmp_path / "changed.json"
    record = json.loads(out.read_text())
    changed.write_bytes(canonical_bytes({**record, "workflowHash": "sha256:" + "0" * 64}))
    right = tmp_path / "right.json"
    right.write_text('{"ticket": "T-1"}')
    assert main([*flags, "checkpoint", "resume", str(changed), "--context", str(right)]) == 2
    err = capsys.readouterr().err
    assert "CHECKPOINT_PLAN_MISMATCH" in err
    assert "exact workflow version" in err

    assert main([*flags, "checkpoint", "resume", str(tmp_path / "missing.json"), "--json"]) == 2
    assert _json(capsys)["error"]["code"] == "VALIDATION_ERROR"


def test_checkpoint_export_rejects_a_bad_token(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--data-dir", str(data_dir), "checkpoint", "export", "chk1.nope", "--json"]) == 2
    assert _json(capsys)["error"]["code"].startswith("TOKEN_")


# --- import tokens and damaged sessions --------------------------------------------------


def test_import_prints_fresh_tokens(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _walk(data_dir)
    bundle = tmp_path / "bundle.json"
    assert main(["--data-dir", str(data_dir), "export", sid, "-o", str(bundle)]) == 0
    capsys.readouterr()
    assert main(["--data-dir", str(tmp_path / "new"), "import", str(bundle), "--json"]) == 0
    tokens = _json(capsys)["tokens"]
    assert tokens["sessionId"] == sid
    assert tokens["renamed"] is False
    (run,) = tokens["runs"]
    assert run["pending"]["stepId"] == "verify"
    engine = make_engine(tmp_path / "new")
    advanced = engine.advance(run["stateToken"], run["ackToken"], notes_markdown="ok").unwrap()
    assert advanced["isComplete"] is True


def test_sessions_show_corrupt_tail_renders_its_prefix(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = _walk(data_dir)
    segment = max((data_dir / "sessions" / sid / "events").iterdir())
    raw = bytearray(segment.read_bytes())
    raw[10] ^= 0x01
    segment.write_bytes(bytes(raw))
    assert main(["--data-dir", str(data_dir), "sessions", "--json"]) == 0
    (row,) = _json(capsys)["sessions"]
    assert row["health"] == "corrupt_tail"
    assert main(["--data-dir", str(data_dir), "sessions", "show", sid]) == 1
    out = capsys.readouterr().out
    assert "refuses to advance or checkpoint, but can still be read" in out
    assert "corrupt_tail" in out
    assert "plan" in out


def test_sessions_show_prints_notes_with_markup_characters_verbatim(tmp_path: Path) -> None:

    data = tmp_path / "data"
    engine = make_engine(data)
    r = engine.start_workflow("probe-flow").unwrap()
    notes = "Checked `xs[/]` handling and [bold] tags"
    engine.advance(r["stateToken"], r["ackToken"], notes_markdown=notes).unwrap()
    sid = engine.deps.codec.parse_state(r["stateToken"]).unwrap().session_id
    out = subprocess.run(
        [sys.executable, "-m", "workrail", "--data-dir", str(data), "sessions", "show", sid],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert notes in out.stdout


def test_a_failed_demo_still_reports_the_checks_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import io

    import workrail.cli.demo as demo

    monkeypatch.setitem(demo.NOTES, "plan", "too short")
    out = io.StringIO()
    argv = ["demo", "--json", "--data-dir", str(tmp_path / "demo")]
    assert main(argv, out=out, err=io.StringIO()) == 1
    report = json.loads(out.getvalue())
    assert report["ok"] is False
    assert report["failure"]
    assert report["checks"]
    assert report["sessionId"].startswith("sess_")


def test_the_command_table_names_every_command_of_every_module() -> None:
    import argparse
    import importlib

    from workrail import cli as cli_package

    registered: dict[str, str] = {}
    for module in cli_package.MODULES:
        parser = argparse.ArgumentParser()
        subparsers = parser.add_subparsers()
        importlib.import_module(f"workrail.cli.{module}").register(
            subparsers, argparse.ArgumentParser(add_help=False)
        )
        for name in subparsers.choices:
            registered[name] = module
    assert registered == cli_package.COMMANDS
    assert set(cli_package.MODULES) == set(cli_package.COMMANDS.values())


def test_the_env_names_shown_in_help_are_the_configuration_s() -> None:
    from workrail import cli as cli_package
    from workrail import config

    assert (cli_package.DATA_DIR_ENV, cli_package.STORE_URL_ENV) == (
        config.DATA_DIR_ENV,
        config.STORE_URL_ENV,
    )


def _imported_by(*argv: str) -> set[str]:
    import json
    import subprocess
    import sys

    code = (
        "import json, sys\n"
        "from workrail.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_version_loads_no_command_and_no_sdk() -> None:
    loaded = _imported_by("--version")
    assert not {m for m in loaded if m.startswith("workrail.cli.")}
    assert not {m for m in loaded if m == "mcp" or m.startswith(("mcp.", "mcp_types"))}


def test_validate_loads_neither_the_sdk_nor_the_store() -> None:
    loaded = _imported_by("validate", "--help")
    assert "workrail.cli.workflows" in loaded
    assert not {m for m in loaded if m == "mcp" or m.startswith("mcp.")}
    assert "workrail.store.local.session_store" not in loaded


def test_a_wrong_postgres_password_is_not_labelled_retryable(
    postgres_cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres_cluster.url("postgres", password="not-the-password")
    assert main(["--store", url, "sessions", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "CONFIG_INVALID"
    assert error["retry"]["kind"] == "not_retryable"
    assert main(["--store", url, "sessions"]) == 2
    err = capsys.readouterr().err
    assert "refused the credentials" in err
    assert "retryable" not in err
    assert "not-the-password" not in err
