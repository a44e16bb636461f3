"""The metrics pass: a workflow's `metricsProfile` adds a footer to step prompts asking the
agent to report `metrics_*` context keys, which the console shows on the session page.

`coding` asks on every step for the commits made and, on the last step, for the outcome and
the pull requests; `review` asks on the last step for the outcome and the pull requests;
`research`, `design` and `ticket` ask on the last step for the outcome; `none` adds nothing.
"""

from __future__ import annotations

from typing import Final

from workrail.workflow.passes.steps import JsonObject, map_steps

METRICS_PROFILES: Final = ("coding", "review", "research", "design", "ticket", "none")
COMMITS_KEY: Final = "metrics_commit_shas"
OUTCOME_KEY: Final = "metrics_outcome"
PRS_KEY: Final = "metrics_pr_numbers"
OUTCOMES: Final = ("success", "partial", "abandoned")
_HEADING: Final = "**METRICS (report as context values):**"
_COMMITS: Final = (
    f"If this step made commits, add their SHAs to `{COMMITS_KEY}` "
    "(an array of strings; keep the ones already there)."
)
_OUTCOME: Final = f"This is the last step: set `{OUTCOME_KEY}` to one of {', '.join(OUTCOMES)}."
_PRS: Final = f"If pull requests were opened or reviewed, list their numbers in `{PRS_KEY}`."


def footer(profile: str, last: bool) -> str:
    """The footer for one step ('' when the profile asks nothing of it)."""
    lines: list[str] = []
    if profile == "coding":
        lines.append(_COMMITS)
    if last and profile in ("coding", "review"):
        lines += [_OUTCOME, _PRS]
    elif last and profile in ("research", "design", "ticket"):
        lines.append(_OUTCOME)
    if not lines:
        return ""
    return "\n\n" + _HEADING + "\n" + "\n".join(f"- {line}" for line in lines)


def last_step_id(definition: JsonObject) -> str | None:
    """The step that runs last in document order (a trailing loop's last body step)."""
    steps = definition.get("steps") or []
    if not steps or not isinstance(steps[-1], dict):
        return None
    last = steps[-1]
    body = last.get("body")
    if last.get("type") == "loop" and isinstance(body, list) and body:
        return str(body[-1].get("id")) if isinstance(body[-1], dict) else None
    if last.get("type") == "loop" and isinstance(body, str):
        return body
    return str(last.get("id"))


def add_metrics_footer(definition: JsonObject) -> JsonObject:
    """The pass."""
    profile = definition.get("metricsProfile")
    if not isinstance(profile, str) or profile == "none":
        return definition
    last = last_step_id(definition)

    def add(step: JsonObject) -> list[JsonObject]:
        text = footer(profile, step.get("id") == last)
        if not text or not isinstance(step.get("prompt"), str):
            return [step]
        return [{**step, "prompt": step["prompt"] + text}]

    return map_steps(definition, add)
