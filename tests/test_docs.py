"""The README and docs/ say only what is true: every relative link resolves inside the
repository, and every shell example runs.

A fenced `bash`/`sh` block is run unless the line before it is
`<!-- not runnable: why -->` (a server that never returns, an installer, this very suite).
The blocks of one file run in order, in one scratch directory with its own HOME and data
directory and the repository's `workflows/` beside it, with `workrail` on PATH, offline;
a block passes when it exits 0, and when a `text` block follows it directly, that block is
what it must print. So a tutorial can build on its earlier blocks, and shows true output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
SHELL = frozenset({"bash", "sh", "shell"})
NOT_RUNNABLE = re.compile(r"^<!-- not runnable: .+ -->$")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    text: str
    runnable: bool
    info: str = ""
    """The fence's whole info string (`json effect_checkpoint call`)."""
    end: int = 0
    """The line of the closing fence."""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if opened is None:
            i += 1
            continue
        fence, info = opened["fence"], opened["info"].strip()
        language = info.split(" ")[0]
        previous = next((s.strip() for s in reversed(lines[:i]) if s.strip()), "")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j])
            j += 1
        runnable = not NOT_RUNNABLE.match(previous)
        text = "\n".join(body) + "\n"
        found.append(Block(path, i + 1, language, text, runnable, info, end=j + 1))
        i = j + 1
    return found


def _prose(path: Path) -> str:
    """The file without its code blocks (links inside code are examples, not links)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    kept: list[str] = []
    fence: str | None = None
    for line in lines:
        opened = FENCE.match(line)
        if fence is None and opened is not None:
            fence = opened["fence"]
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            kept.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(kept)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(path: Path) -> None:
    broken = []
    for match in LINK.finditer(_prose(path)):
        target = match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page
        resolved = (path.parent / target.split("#", 1)[0]).resolve()
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)} links to files that are not in the repo: {broken}"


SHELL_DOCS = [p for p in DOCS if any(b.language in SHELL for b in blocks_of(p))]


def _sandbox_env(scratch: Path) -> dict[str, str]:
    venv_bin = Path(sys.executable).parent
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WORKRAIL_", "WORKFLOW_")) and k not in {"CI"}
    }
    env.update(
        HOME=str(scratch / "home"),
        # not under HOME: an example whose server does not get the reader's environment
        # (and so writes to ~/.workrail/data) is caught by the next block finding nothing
        WORKRAIL_DATA_DIR=str(scratch / "data"),
        PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}",
        WORKRAIL_REPO=str(ROOT),
        NO_COLOR="1",
        COLUMNS="100",
    )
    return env


@pytest.mark.parametrize("path", SHELL_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shell_examples_run(path: Path, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    (scratch / "home").mkdir(parents=True)
    (scratch / "workflows").symlink_to(ROOT / "workflows")
    env = _sandbox_env(scratch)
    blocks = blocks_of(path)
    for n, block in enumerate(blocks):
        if block.language not in SHELL or not block.runnable:
            continue
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.text],
            cwd=scratch,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, (
            f"{block.where}: the example exited {done.returncode}.\n--- block\n{block.text}"
            f"--- stdout\n{done.stdout}--- stderr\n{done.stderr}\n"
            "Fix the example, or mark it `<!-- not runnable: why -->` on the line before it."
        )
        shown = _shown_output(path, block, blocks[n + 1] if n + 1 < len(blocks) else None)
        if shown is not None:
            assert done.stdout == shown, (
                f"{block.where}: the output shown below the example is not what it prints.\n"
                f"--- shown\n{shown}--- printed\n{done.stdout}"
            )


def _shown_output(path: Path, block: Block, following: Block | None) -> str | None:
    """The `text` block right after `block` (nothing but blank lines between), if any."""
    if following is None or following.language != "text":
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    between = lines[block.end : following.line - 1]
    return following.text if all(not line.strip() for line in between) else None


def test_the_block_reader_sees_markers() -> None:
    sample = ROOT / "README.md"
    shells = [b for b in blocks_of(sample) if b.language in SHELL]
    assert shells, "the README shows how to set up with a shell block"
    assert not shells[0].runnable, "the set-up block installs; it is marked not runnable"


# --- statements the docs make about the code --------------------------------------------


def _text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def test_the_regex_flags_documented_are_the_validators() -> None:
    from workrail.workflow.jsvalues import _KNOWN_FLAGS

    row = next(line for line in _text("docs/first-workflow.md").splitlines() if "`flags`" in line)
    assert set(re.findall(r"`([a-z])`", row)) == _KNOWN_FLAGS, row
    listed = re.search(r"any of\s+`([a-z ]+)`", _text("docs/workflows.md"))
    assert listed is not None
    assert set(listed.group(1).split()) == _KNOWN_FLAGS


def test_the_dotted_workflow_id_the_docs_show_is_one_the_tools_accept() -> None:
    from workrail.mcp.schemas import WORKFLOW_ID_PATTERN

    shown = re.search(r'\{"workflowId": "([^"]+)"\}` starts it', _text("docs/workflows.md"))
    assert shown is not None
    assert "." in shown.group(1)
    assert re.match(WORKFLOW_ID_PATTERN, shown.group(1))


def test_the_readme_gives_one_start_up_figure() -> None:
    readme = _text("README.md")
    prose = re.search(r"answers `initialize`.*?\((\d+) ms median to `tools/list`", readme, re.S)
    table = re.search(r"spawn → `tools/list` answered .*?\| (\d+) ms median", readme)
    assert prose is not None
    assert table is not None
    assert prose.group(1) == table.group(1), "the prose and the Performance table disagree"


def test_the_readme_introduces_the_continue_token() -> None:
    readme = _text("README.md")
    section = readme.split("## A session, in short", 1)[1].split("\n## ", 1)[0]
    assert "continueToken" in section
    assert "WorkRail v1.4, the earlier version" in section


def test_key_rotation_needs_no_restart_as_the_docs_say() -> None:
    from workrail.engine.signing import REFRESH_SECONDS

    for name in ("README.md", "docs/mcp.md"):
        text = " ".join(_text(name).split())
        assert "restart them after a rotation" not in text, name
        assert f"within {int(REFRESH_SECONDS)} seconds" in text, name
