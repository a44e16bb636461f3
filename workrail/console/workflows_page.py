"""The Workflows view: every definition found, where it came from, which ones another
source shadows, and what is wrong with the files that do not validate."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from returns.result import Success
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from workrail.console.pages import PageContext
from workrail.console.workflow_graph import (
    chart_svg,
    figures_for,
    flatten,
    format_seconds,
    graph_steps,
    graph_svg,
)
from workrail.engine.api import StepStats
from workrail.workflow.catalog import Catalog, InvalidWorkflow, LoadedWorkflow
from workrail.workflow.language import V14
from workrail.workflow.metadata import catalogue_fields, spec_version_hint


@dataclass(frozen=True)
class CatalogRow:
    workflow_id: str
    name: str
    version: str
    origin: str
    path: str
    valid: bool
    shadowed_by: str | None = None
    problems: int = 0
    example: str | None = None


def _rows(catalog: Catalog) -> list[CatalogRow]:
    rows = [
        CatalogRow(
            wf.workflow_id,
            str(wf.definition.get("name", "")),
            str(wf.definition.get("version", "")),
            wf.source.origin,
            str(wf.path),
            True,
            example=_first_example(wf),
        )
        for wf in catalog.workflows.values()
    ]
    rows += [
        CatalogRow(
            sh.workflow.workflow_id,
            str(sh.workflow.definition.get("name", "")),
            str(sh.workflow.definition.get("version", "")),
            sh.workflow.source.origin,
            str(sh.workflow.path),
            True,
            shadowed_by=str(sh.winner.path),
        )
        for sh in catalog.shadowed
    ]
    rows += [
        CatalogRow(
            bad.workflow_id or "(no readable id)",
            bad.name or "",
            bad.version or "",
            bad.source.origin,
            str(bad.path),
            False,
            problems=len(bad.problems),
        )
        for bad in catalog.invalid
    ]
    return sorted(rows, key=lambda r: (r.workflow_id, r.shadowed_by is not None, not r.valid))


def _first_example(wf: LoadedWorkflow) -> str | None:
    examples = catalogue_fields(wf.definition).get("examples") or []
    return str(examples[0]) if examples else None


def catalog_page(ctx: PageContext, request: Request) -> Response:
    catalog = ctx.deps.catalog()
    return ctx.render(
        request,
        "workflows.html",
        rows=_rows(catalog),
        invalid=catalog.invalid,
        warnings=catalog.warnings,
        live_url=None,
        version="",
    )


def workflow_page(ctx: PageContext, request: Request) -> Response:
    workflow_id = request.path_params["workflow_id"]
    catalog = ctx.deps.catalog()
    winner: LoadedWorkflow | None = catalog.workflows.get(workflow_id)
    shadowed = [sh.workflow for sh in catalog.shadowed if sh.workflow.workflow_id == workflow_id]
    invalid: list[InvalidWorkflow] = [b for b in catalog.invalid if b.workflow_id == workflow_id]
    if winner is None and not invalid:
        raise HTTPException(404, f"No workflow {workflow_id[:80]!r} in any workflow source.")
    definition = winner.definition if winner is not None else None
    return ctx.render(
        request,
        "workflow.html",
        workflow_id=workflow_id,
        winner=winner,
        steps=definition.get("steps", []) if isinstance(definition, dict) else [],
        definition_json=json.dumps(definition, indent=2, ensure_ascii=False) if definition else "",
        workflow_hash=winner.pinned().workflow_hash() if winner is not None else None,
        shadowed=shadowed,
        invalid=invalid,
        newer_constructs=[c for c in winner.constructs() if c.since != V14] if winner else [],
        **_graph_and_figures(ctx, workflow_id, definition),
        spec_hint=spec_version_hint(definition) if definition else None,
        live_url=None,
        version="",
    )


def _graph_and_figures(
    ctx: PageContext, workflow_id: str, definition: dict[str, Any] | None
) -> dict[str, Any]:
    """The step graph, the per-step chart and the figures behind them. A store that
    cannot be read leaves the graph without figures and says so."""
    steps = graph_steps(definition.get("steps", [])) if isinstance(definition, dict) else []
    got = ctx.deps.engine.workflow_stats(workflow_id)
    stats = got.unwrap() if isinstance(got, Success) else None
    figures = stats.steps if stats is not None else {}
    return {
        "graph": graph_svg(steps, figures) if steps else None,
        "chart": chart_svg(steps, figures) if stats is not None and stats.runs else None,
        "stats": stats,
        "stats_problem": None if isinstance(got, Success) else got.failure().message,
        "metric_rows": sorted(stats.metrics.values(), key=lambda m: m.key) if stats else [],
        "stat_rows": [
            {
                "key": box.key,
                "title": box.title,
                "figures": f,
                "time": format_seconds(f.median_seconds) if f.median_seconds is not None else None,
            }
            for box in flatten(steps)
            for f in [figures_for(box, figures) or StepStats(box.key)]
        ],
    }
