"""A workflow's step graph and its per-step chart, as inline SVG (no script, no CDN).

Pure: a source definition (and the figures of its runs, when there are any) in, markup
out; every text that came from a file is escaped. The graph reads top to bottom in the
order steps are offered: a loop is a frame around its body, labelled with what ends it; a
conditional step has a dashed border, its condition beside it and a skip arrow around it;
a routine call is a double box naming the routine. The chart draws, per step, how many
runs reached it, how many completed it and how often agents were blocked there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from markupsafe import Markup, escape

from workrail.engine.api import StepStats

BOX_W: Final = 380
BOX_H: Final = 46
GAP: Final = 22
INDENT: Final = 26
LOOP_HEAD: Final = 30
LEFT: Final = 16
MAX_LABEL: Final = 52


@dataclass(frozen=True)
class GraphStep:
    """One box: a step, a routine call, or the frame of a loop (with its body)."""

    key: str
    """The id runs record it under (a routine call: the caller's id, its steps `key__…`)."""
    title: str
    kind: str
    """`step`, `routine` or `loop`."""
    condition: str | None = None
    detail: str | None = None
    body: tuple[GraphStep, ...] = ()


def _short(text: str, limit: int = MAX_LABEL) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_condition(condition: Any) -> str | None:
    """A condition as a person reads it: `taskComplexity = large`, `not (…)`, `a and b`."""
    if not isinstance(condition, dict) or not condition:
        return None
    if "var" in condition:
        var = str(condition["var"])
        for op, word in (
            ("equals", "="),
            ("not_equals", "≠"),
            ("gt", ">"),
            ("gte", "≥"),
            ("lt", "<"),
            ("lte", "≤"),
            ("in", "in"),
            ("contains", "contains"),
            ("matches", "matches"),
        ):
            if op in condition:
                return f"{var} {word} {json.dumps(condition[op], ensure_ascii=False)}"
        return var
    for op in ("and", "or"):
        parts = condition.get(op)
        if isinstance(parts, list):
            inner = [describe_condition(p) or "…" for p in parts]
            return f" {op} ".join(inner)
    if "not" in condition:
        return f"not ({describe_condition(condition['not']) or '…'})"
    return "a condition"


def _loop_detail(loop: Any, body: Sequence[Any] = ()) -> str:
    if not isinstance(loop, dict):
        return "loop"
    kind = str(loop.get("type", "loop"))
    cap = loop.get("maxIterations")
    bound = f", at most {cap}" if isinstance(cap, int | float) else ""
    if kind == "forEach":
        return f"for each of {loop.get('items', '?')}{bound}"
    if kind == "for":
        return f"{loop.get('count', '?')} times{bound}"
    source = loop.get("conditionSource")
    by_contract = any(
        isinstance(s, dict)
        and isinstance(s.get("outputContract"), dict)
        and s["outputContract"].get("contractRef") == "wr.contracts.loop_control"
        for s in body
    )
    if (
        (isinstance(source, dict) and source.get("kind") == "artifact_contract")
        or (source is None and by_contract)
        or ("condition" not in loop and source is None)
    ):
        return f"{kind}, decided by the agent's loop_control artifact{bound}"
    inner = source.get("condition") if isinstance(source, dict) else None
    condition = describe_condition(loop.get("condition") or inner)
    return f"{kind} {condition or ''}{bound}"


def graph_steps(steps: Sequence[Any], top: Mapping[str, Any] | None = None) -> list[GraphStep]:
    """The source steps as boxes (a loop whose body names a top-level step shows it)."""
    if top is None:
        top = {str(s.get("id")): s for s in steps if isinstance(s, dict)}
    used_as_body = {
        s.get("body") for s in steps if isinstance(s, dict) and isinstance(s.get("body"), str)
    }
    out: list[GraphStep] = []
    for step in steps:
        if not isinstance(step, dict) or not isinstance(step.get("id"), str):
            continue
        step_id = step["id"]
        if step_id in used_as_body and top is not None and step is top.get(step_id):
            continue  # drawn inside the loop that runs it
        title = str(step.get("title") or step_id)
        condition = describe_condition(step.get("runCondition"))
        if step.get("type") == "loop":
            body = step.get("body")
            members = (
                [top[body]]
                if isinstance(body, str) and body in top
                else body
                if isinstance(body, list)
                else []
            )
            detail = _loop_detail(step.get("loop"), members)
            inner = tuple(graph_steps(members, {}))
            out.append(GraphStep(step_id, title, "loop", condition, detail, inner))
        elif isinstance(step.get("templateCall"), dict):
            template = str(step["templateCall"].get("templateId", "?"))
            out.append(GraphStep(step_id, title, "routine", condition, f"routine {template}"))
        else:
            out.append(GraphStep(step_id, title, "step", condition))
    return out


def figures_for(step: GraphStep, stats: Mapping[str, StepStats]) -> StepStats | None:
    """A box's figures: its own, or a routine call's summed over its expanded steps."""
    if step.kind != "routine":
        return stats.get(step.key)
    parts = [s for key, s in stats.items() if key.startswith(step.key + "__")]
    if not parts:
        return None
    total = StepStats(step.key)
    total.reached = max(p.reached for p in parts)
    total.completed = min(p.completed for p in parts)
    total.blocked = sum(p.blocked for p in parts)
    total.seconds = [x for p in parts for x in p.seconds]
    return total


def _height(step: GraphStep) -> int:
    if step.kind != "loop":
        return BOX_H
    inner = sum(_height(s) + GAP for s in step.body)
    return LOOP_HEAD + inner + 6


def _figure_line(figures: StepStats | None) -> str:
    if figures is None or figures.reached == 0:
        return "no runs yet"
    rate = figures.completion_rate or 0.0
    parts = [f"{figures.completed}/{figures.reached} done ({rate:.0%})"]
    if figures.blocked:
        parts.append(f"blocked {figures.blocked}×")
    median = figures.median_seconds
    if median is not None:
        parts.append(f"median {format_seconds(median)}")
    if figures.median_iterations is not None:
        parts.append(f"{figures.median_iterations:g} iterations")
    return " · ".join(parts)


def format_seconds(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _draw(
    step: GraphStep, x: int, y: int, width: int, stats: Mapping[str, StepStats], out: list[str]
) -> int:
    """Draw `step` at (x, y); returns the y below it."""
    title = escape(_short(step.title))
    key = escape(step.key)
    if step.kind == "loop":
        height = _height(step)
        out.append(
            f'<g class="wg-loop" data-step="{key}"><rect x="{x}" y="{y}" width="{width}" '
            f'height="{height}" rx="10" class="wg-loop-frame"/>'
            f'<text x="{x + 10}" y="{y + 19}" class="wg-loop-label">↻ {title} — '
            f"{escape(_short(step.detail or '', 60))}</text>"
        )
        inner_y = y + LOOP_HEAD
        for inner in step.body:
            inner_y = _draw(inner, x + INDENT // 2, inner_y, width - INDENT, stats, out)
        out.append("</g>")
        return y + height + GAP
    classes = f"wg-box wg-{step.kind}" + (" wg-conditional" if step.condition else "")
    figures = figures_for(step, stats)
    tooltip = escape(
        f"{step.key}" + (f" — runs only if {step.condition}" if step.condition else "")
    )
    out.append(
        f'<g class="{classes}" data-step="{key}"><title>{tooltip}</title>'
        f'<rect x="{x}" y="{y}" width="{width}" height="{BOX_H}" rx="6"/>'
    )
    if step.kind == "routine":
        out.append(
            f'<rect x="{x + 3}" y="{y + 3}" width="{width - 6}" height="{BOX_H - 6}" rx="4" '
            'class="wg-inner"/>'
        )
    out.append(f'<text x="{x + 10}" y="{y + 19}" class="wg-title">{title}</text>')
    sub = step.detail if step.kind == "routine" else None
    line = _figure_line(figures) if sub is None else f"{sub} · {_figure_line(figures)}"
    out.append(f'<text x="{x + 10}" y="{y + 36}" class="wg-sub">{escape(_short(line, 64))}</text>')
    out.append("</g>")
    if step.condition:
        out.append(
            f'<text x="{x + width + 8}" y="{y + 20}" class="wg-cond">if '
            f"{escape(_short(step.condition, 34))}</text>"
            f'<path d="M{x + width} {y - 4} C{x + width + 40} {y + 6}, {x + width + 40} '
            f'{y + BOX_H - 6}, {x + width} {y + BOX_H + 8}" class="wg-skip"/>'
        )
    return y + BOX_H + GAP


def graph_svg(steps: Sequence[GraphStep], stats: Mapping[str, StepStats]) -> Markup:
    """The whole graph; arrows join consecutive boxes."""
    out: list[str] = []
    y = 10
    tops: list[tuple[int, int]] = []
    for step in steps:
        start = y
        y = _draw(step, LEFT, y, BOX_W, stats, out)
        tops.append((start, y - GAP))
    arrows = [
        f'<line x1="{LEFT + BOX_W // 2}" y1="{end}" x2="{LEFT + BOX_W // 2}" y2="{nxt - 2}" '
        'class="wg-arrow" marker-end="url(#wg-head)"/>'
        for (_, end), (nxt, _) in zip(tops, tops[1:], strict=False)
    ]
    width = LEFT + BOX_W + 200
    head = (
        '<defs><marker id="wg-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0 0L10 5L0 10z"/></marker></defs>'
    )
    body = "".join(out) + "".join(arrows)
    return Markup(
        f'<svg class="workflow-graph" role="img" aria-label="Step graph" '
        f'viewBox="0 0 {width} {y}" width="{width}" height="{y}" '
        f'xmlns="http://www.w3.org/2000/svg">{head}{body}</svg>'
    )


def flatten(steps: Sequence[GraphStep]) -> list[GraphStep]:
    """Boxes in drawing order, loops replaced by their bodies."""
    out: list[GraphStep] = []
    for step in steps:
        out.extend(flatten(step.body) if step.kind == "loop" else [step])
    return out


def chart_svg(steps: Sequence[GraphStep], stats: Mapping[str, StepStats]) -> Markup:
    """Per step a bar of the runs that reached it, the completed part filled, and the
    blocked advances as a red mark sized by how often."""
    rows = [(s, figures_for(s, stats)) for s in flatten(steps)]
    most = max([f.reached for _, f in rows if f is not None] + [1])
    label_w, bar_w, row_h = 210, 260, 22
    out: list[str] = []
    for i, (step, figures) in enumerate(rows):
        y = 8 + i * row_h
        reached = figures.reached if figures else 0
        done = figures.completed if figures else 0
        blocked = figures.blocked if figures else 0
        out.append(
            f'<g class="wc-row" data-step="{escape(step.key)}">'
            f'<text x="0" y="{y + 13}" class="wc-label">{escape(_short(step.title, 30))}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{bar_w * reached // most}" height="12" '
            f'class="wc-reached"><title>{reached} runs reached it</title></rect>'
            f'<rect x="{label_w}" y="{y + 3}" width="{bar_w * done // most}" height="12" '
            f'class="wc-done"><title>{done} runs completed it</title></rect>'
        )
        if blocked:
            out.append(
                f'<circle cx="{label_w + bar_w + 14}" cy="{y + 9}" r="{min(9, 3 + blocked)}" '
                f'class="wc-blocked"><title>blocked {blocked}×</title></circle>'
            )
        out.append("</g>")
    height = 16 + len(rows) * row_h
    width = label_w + bar_w + 40
    return Markup(
        f'<svg class="workflow-chart" role="img" aria-label="Runs per step" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(out)}</svg>'
    )
