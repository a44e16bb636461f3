"""Which job a workflow does, for listing a catalogue the way a person looks for one.

Pure. Workflow files carry no job field (WorkRail's format has none, and a team's own
files must keep loading in WorkRail), so the job is read from the words of the id and the
name: the first group one of whose stems starts a word there wins, in the order below, and a workflow that
matches none is listed under "Other". The groups are few on purpose: a person scanning
`workrail workflows` should find the right one in a glance.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Final, TypeVar

OTHER: Final = "Other"
JOBS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("Route a task", ("classify", "classification", "router", "routing")),
    ("Write and check workflows", ("authoring", "routine")),
    (
        "Debug and investigate",
        ("bug", "debug", "incident", "postmortem", "performance", "diagnos", "environment"),
    ),
    ("Review and audit", ("review", "audit", "readiness", "security", "gate")),
    (
        "Build and change code",
        ("coding", "code", "refactor", "dependency", "upgrade", "conversion", "implement", "test"),
    ),
    ("Write documents and tickets", ("doc", "ticket", "presentation", "writing", "document")),
    (
        "Explore, research and design",
        ("explor", "research", "discovery", "design", "shaping", "ideation", "differentiation"),
    ),
    ("Learn and teach", ("learn", "course", "teach", "tutor")),
)
_WORD_RE: Final = re.compile(r"[a-z0-9]+")


def job_of(workflow_id: str, name: str = "") -> str:
    """The job group of a workflow, from its id (without namespace) and its name."""
    bare = workflow_id.split(".", 1)[-1].lower()
    tokens = _WORD_RE.findall(f"{bare} {name.lower()}")
    for job, words in JOBS:
        if any(token.startswith(word) for token in tokens for word in words):
            return job
    return OTHER


T = TypeVar("T")


def group_by_job(items: Iterable[T], job: Callable[[T], str]) -> list[tuple[str, list[T]]]:
    """`items` in job groups, in the order of JOBS (then Other), keeping their order."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(job(item), []).append(item)
    order = [name for name, _ in JOBS] + [OTHER]
    return [(name, groups[name]) for name in order if name in groups]


def first_sentence(text: str, limit: int = 90) -> str:
    """The description's first sentence, cut to `limit` characters for a one-line row."""
    flat = " ".join(text.split())
    sentence = re.split(r"(?<=[.!?])\s", flat, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"
