"""The one configuration object: pure parsing of the environment and the flags."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from workrail.config import HttpLimits, Overrides, load_config
from workrail.core.urls import redact_url

PACKAGE = Path(__file__).resolve().parents[1] / "workrail"
HOME, CWD = Path("/home/someone"), Path("/work/project")


def test_defaults_are_files_in_the_home_data_directory() -> None:
    config = load_config({}, home=HOME, cwd=CWD).unwrap()
    assert config.data_dir == HOME / ".workrail" / "data"
    assert config.store_url is None
    assert not config.uses_postgres
    assert config.log.level == "WARNING"
    assert config.log.file is None
    assert config.fence.url is None
    assert config.fence.limits.client_rpm == 30


def test_flags_beat_the_environment_and_relative_paths_follow_the_working_directory() -> None:
    env = {
        "WORKRAIL_DATA_DIR": "/from/env",
        "WORKRAIL_STORE_URL": "postgresql://env@db/x",
        "WORKRAIL_LOG_LEVEL": "info",
    }
    flags = Overrides(data_dir="rel", store_url="postgres://flag@db/y", log_level="debug")
    config = load_config(env, flags, home=HOME, cwd=CWD).unwrap()
    assert config.data_dir == CWD / "rel"
    assert config.store_url == "postgres://flag@db/y"
    assert config.log.level == "DEBUG"
    only_env = load_config(env, home=HOME, cwd=CWD).unwrap()
    assert only_env.data_dir == Path("/from/env")
    assert only_env.store_url == "postgresql://env@db/x"
    assert only_env.log.level == "INFO"


def test_the_http_limits_default_and_two_of_them_can_be_set() -> None:
    defaults = load_config({}, home=HOME, cwd=CWD).unwrap().http
    assert defaults == HttpLimits()
    assert (defaults.head_timeout_s, defaults.max_sessions) == (10.0, 512)
    env = {"WORKRAIL_HTTP_HEAD_TIMEOUT_S": " 2.5 ", "WORKRAIL_HTTP_MAX_SESSIONS": "8"}
    limits = load_config(env, home=HOME, cwd=CWD).unwrap().http
    assert limits == HttpLimits(head_timeout_s=2.5, max_sessions=8)


@pytest.mark.parametrize(
    ("env", "flags", "setting"),
    [
        ({"WORKRAIL_STORE_URL": "mysql://x"}, Overrides(), "WORKRAIL_STORE_URL"),
        ({}, Overrides(store_url="sqlite:///x.db"), "--store"),
        ({"WORKRAIL_LOG_LEVEL": "chatty"}, Overrides(), "WORKRAIL_LOG_LEVEL"),
        ({"WORKRAIL_FENCE_URL": "ftp://x"}, Overrides(), "WORKRAIL_FENCE_URL"),
        ({"WORKRAIL_FENCE_CLIENT_RPM": "-1"}, Overrides(), "fence rate limit"),
        ({"WORKRAIL_HTTP_HEAD_TIMEOUT_S": "0"}, Overrides(), "WORKRAIL_HTTP_HEAD_TIMEOUT_S"),
        ({"WORKRAIL_HTTP_HEAD_TIMEOUT_S": "soon"}, Overrides(), "WORKRAIL_HTTP_HEAD_TIMEOUT_S"),
        ({"WORKRAIL_HTTP_HEAD_TIMEOUT_S": "nan"}, Overrides(), "WORKRAIL_HTTP_HEAD_TIMEOUT_S"),
        ({"WORKRAIL_HTTP_MAX_SESSIONS": "0"}, Overrides(), "WORKRAIL_HTTP_MAX_SESSIONS"),
        ({"WORKRAIL_HTTP_MAX_SESSIONS": "-5"}, Overrides(), "WORKRAIL_HTTP_MAX_SESSIONS"),
    ],
)
def test_a_bad_setting_is_named(env: dict[str, str], flags: Overrides, setting: str) -> None:
    problem = load_config(env, flags, home=HOME, cwd=CWD).failure()
    assert problem.setting == setting
    assert problem.message


def test_a_bad_store_url_never_echoes_its_password() -> None:
    problem = load_config({"WORKRAIL_STORE_URL": "mysql://root:s3cret@db/x"}, home=HOME, cwd=CWD)
    assert "s3cret" not in str(problem.failure())
    assert redact_url("postgresql://u:pw@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert redact_url("postgresql:///db") == "postgresql:///db"


def test_files_are_the_store_when_asked_by_name() -> None:
    for value in ("", "files", "file"):
        assert (
            load_config({"WORKRAIL_STORE_URL": value}, home=HOME, cwd=CWD).unwrap().store_url
            is None
        )


def test_memory_is_the_store_when_asked_for_by_url() -> None:
    """`memory://` (for tests and demos) is neither files nor PostgreSQL."""
    for value in ("memory://", "memory", " memory:// "):
        config = load_config({"WORKRAIL_STORE_URL": value}, home=HOME, cwd=CWD).unwrap()
        assert config.store_url == "memory://"
        assert config.uses_memory
        assert not config.uses_postgres
        assert "nothing is kept" in config.store_label
    refused = load_config({"WORKRAIL_STORE_URL": "memory://x"}, home=HOME, cwd=CWD)
    assert "memory://" in refused.failure().message
    files = load_config({}, home=HOME, cwd=CWD).unwrap()
    assert not files.uses_memory
    assert files.store_label == str(files.data_dir)


def test_the_fence_follows_only_a_postgresql_store() -> None:
    """A memory (or files) store keeps the fence in the data directory's SQLite; only a
    PostgreSQL store, shared by replicas, is also where the fence lives by default."""
    memory = load_config({"WORKRAIL_STORE_URL": "memory://"}, home=HOME, cwd=CWD).unwrap()
    assert memory.fence_url is None
    url = "postgresql://u@h/db"
    shared = load_config({"WORKRAIL_STORE_URL": url}, home=HOME, cwd=CWD).unwrap()
    assert shared.fence_url == url


def test_no_module_writes_the_process_environment() -> None:
    """Configuration travels in the config object, never through os.environ."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and ast.unparse(target.value) == "os.environ":
                    offenders.append(f"{path}:{getattr(node, 'lineno', '?')}")
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name in (
                    "os.putenv",
                    "os.environ.update",
                    "os.environ.setdefault",
                    "os.unsetenv",
                ):
                    offenders.append(f"{path}:{node.lineno}")
    assert offenders == []
