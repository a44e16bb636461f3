"""`workrail validate` and `workrail workflows [show]`: thin handlers over the catalog."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from returns.result import Failure

from workrail.cli.context import add_command
from workrail.core.errors import envelope
from workrail.core.text import screen_safe
from workrail.core.wording import counted, did_you_mean
from workrail.workflow.catalog import (
    Catalog,
    InvalidWorkflow,
    LoadedWorkflow,
    SourceOrigin,
    load_file,
    load_routines,
)
from workrail.workflow.compiler import CompiledWorkflow
from workrail.workflow.definition import LoopStep
from workrail.workflow.jobs import first_sentence, group_by_job, job_of
from workrail.workflow.language import Construct
from workrail.workflow.lint import LintWarning, lint_workflow
from workrail.workflow.sources import (
    DiscoveryConfig,
    bundled_workflows_dir,
    discover,
    read_workflow_file,
    routines_near,
)


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Register `validate` and `workflows` on the main parser's subparsers."""
    validate = add_command(
        subparsers, common, "validate", "validate workflow files", "Validate workflow JSON files."
    )
    validate.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="workflow files or directories (a routines/ folder beside a file provides the "
        "routines it may include)",
    )
    validate.set_defaults(handler=lambda cli: run_validate(cli.args, cli.out, cli.as_json))

    workflows = add_command(
        subparsers, common, "workflows", "list or show available workflows", "List workflows."
    )
    workflows.set_defaults(
        handler=lambda cli: run_list(cli.args, cli.out, cli.config.discovery, cli.as_json)
    )
    nested = workflows.add_subparsers(dest="workflows_command", metavar="COMMAND")
    show = add_command(nested, common, "show", "show one workflow")
    show.add_argument("workflow_id", metavar="ID")
    show.add_argument("--compiled", action="store_true", help="print the pinned envelope")
    show.set_defaults(
        handler=lambda cli: run_show(
            cli.args, cli.out, cli.config.discovery, cli.as_json, report=cli.fail
        )
    )


# --- validate ---------------------------------------------------------------------------


def run_validate(args: argparse.Namespace, out: TextIO, as_json: bool) -> int:
    """Exit 0 only when every file is valid; 2 when a path does not exist (or none is
    given). Files named with `--library` are checked with a library's rights."""
    library = [
        *(getattr(args, "global_library", None) or ()),
        *(getattr(args, "library", None) or ()),
    ]
    named = [(p, False) for p in args.paths] + [(p, True) for p in library]
    if not named:
        out.write("Nothing to validate: name workflow files or directories (PATH or --library).\n")
        return 2
    results, missing = _load_named(named)
    ok = not missing and all(isinstance(r, LoadedWorkflow) for r in results)
    # Warnings are printed beside the verdict and never change it (nor exit code, nor hash).
    warned = [_warnings(r) for r in results]
    if as_json:
        payload = {
            "valid": ok,
            "missing": missing,
            "files": [
                {**_validation_json(r), "warnings": [w.to_json() for w in warnings]}
                for r, warnings in zip(results, warned, strict=True)
            ],
        }
        out.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        _print_validation(out, results, warned, missing)
    if missing:
        return 2
    return 0 if ok else 1


def _load_named(
    named: list[tuple[str, bool]],
) -> tuple[list[LoadedWorkflow | InvalidWorkflow], list[str]]:
    """Each named file (a directory: its files, then its routines/ folder's) loaded, and
    the paths that do not exist."""
    bundled = bundled_workflows_dir()
    results: list[LoadedWorkflow | InvalidWorkflow] = []
    missing: list[str] = []
    for raw_path, in_library in named:
        files = _files_at(Path(raw_path))
        if files is None:
            missing.append(raw_path)
            continue
        for file in files:
            origin = _origin(file, in_library, bundled)
            routines = _routines_for(file, origin, bundled)
            results.append(load_file(read_workflow_file(file, origin), routines))
    return results, missing


def _files_at(path: Path) -> list[Path] | None:
    """The workflow files `path` names; None when it does not exist."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
        routines_dir = path / "routines"
        if routines_dir.is_dir():
            files += sorted(p for p in routines_dir.iterdir() if p.suffix == ".json")
        return files
    if path.exists():
        return [path]
    return None


def _origin(file: Path, in_library: bool, bundled: Path | None) -> SourceOrigin:
    """A file of the bundled folder keeps the bundled rights wherever it was named from."""
    in_bundled = bundled is not None and file.resolve().parent in (
        bundled.resolve(),
        (bundled / "routines").resolve(),
    )
    return "bundled" if in_bundled else "library" if in_library else "custom"


def _print_validation(
    out: TextIO,
    results: list[LoadedWorkflow | InvalidWorkflow],
    warned: list[list[LintWarning]],
    missing: list[str],
) -> None:
    for name in missing:
        out.write(screen_safe(f"MISSING  {name}: no such file or directory\n"))
    for r, warnings in zip(results, warned, strict=True):
        _print_result(out, r)
        for w in warnings:
            out.write(screen_safe(f"    WARNING {w.code}  {w.line()}\n"))
    valid = sum(isinstance(r, LoadedWorkflow) for r in results)
    out.write(f"{valid}/{len(results)} valid\n")
    warning_count = sum(len(w) for w in warned)
    if warning_count:
        out.write(
            f"{counted(warning_count, 'warning')}: valid as written, but most likely "
            "not what was meant; each fix follows the dash.\n"
        )
    if missing:
        out.write("Next: check the paths above, then run `workrail validate` again.\n")
    elif valid < len(results):
        out.write(
            "Next: fix each problem at its JSON path (its fix follows the dash), then run "
            "`workrail validate` again.\n"
        )


def _print_result(out: TextIO, r: LoadedWorkflow | InvalidWorkflow) -> None:
    """One file's verdict: its hash and the newer constructs it uses, or its problems."""
    if isinstance(r, InvalidWorkflow):
        out.write(screen_safe(f"INVALID  {r.path}  ({counted(len(r.problems), 'problem')})\n"))
        for p in r.problems:
            out.write(screen_safe(f"    {p.code}  {p.line()}\n"))
        return
    out.write(screen_safe(f"OK       {r.path}  ({r.workflow_id}, {r.pinned().workflow_hash()})\n"))
    newer = [c for c in r.constructs() if c.since != "v1.4.0"]
    if newer:
        out.write("    uses: " + "; ".join(_construct_text(c) for c in newer) + "\n")
    else:
        out.write("    uses: WorkRail v1.4.0 constructs only\n")


def _routines_for(file: Path, origin: SourceOrigin, bundled: Path | None) -> Any:
    """The routines a file may include: the routines/ folder beside it, then the bundled
    ones (a routine of the same template id nearer the file wins)."""
    found = routines_near(file, origin)
    if bundled is not None:
        found += routines_near(bundled / "x.json", "bundled")
    return load_routines(found)[0]


def _construct_text(construct: Construct) -> str:
    return f"{construct.key} ({construct.since})"


def _warnings(r: LoadedWorkflow | InvalidWorkflow) -> list[LintWarning]:
    """The lint warnings of the file as written, then those of loading it (a function
    reference without a definition, Python-only regex syntax, a stale spec version)."""
    if isinstance(r, LoadedWorkflow):
        return [*lint_workflow(r.source_json), *r.warnings]
    return lint_workflow(r.raw) if isinstance(r.raw, dict) else []


def _validation_json(r: LoadedWorkflow | InvalidWorkflow) -> dict[str, Any]:
    if isinstance(r, LoadedWorkflow):
        return {
            "path": str(r.path),
            "valid": True,
            "workflowId": r.workflow_id,
            "workflowHash": r.pinned().workflow_hash(),
            "problems": [],
            "uses": [
                {"construct": c.key, "what": c.label, "workrailVersion": c.since}
                for c in r.constructs()
            ],
        }
    return {
        "path": str(r.path),
        "valid": False,
        "workflowId": r.workflow_id,
        "workflowHash": None,
        "problems": [p.to_json() for p in r.problems],
    }


# --- workflows ----------------------------------------------------------------------------


def run_list(args: argparse.Namespace, out: TextIO, config: DiscoveryConfig, as_json: bool) -> int:
    catalog = discover(config)
    if as_json:
        out.write(json.dumps(_catalog_json(catalog), indent=2, ensure_ascii=False) + "\n")
        return 0
    ids = [wf.workflow_id for wf in catalog.workflows.values()]
    ids += [bad.workflow_id or "(unknown id)" for bad in catalog.invalid]
    wide = max([32, *map(len, ids)])  # an id is never cut nor run into the next column
    if catalog.workflows:
        out.write(f"  {'WORKFLOW':{wide}} DESCRIPTION\n")
    for job, members in group_by_job(catalog.workflows.values(), _job):
        out.write(f"{job}\n")
        for wf in members:
            where = "" if wf.source.origin == "bundled" else f"  [{wf.source.origin}: {wf.path}]"
            summary = first_sentence(str(wf.definition.get("description", "")))
            out.write(f"  {wf.workflow_id:{wide}} {summary}{where}\n")
    if catalog.workflows:
        out.write("\n")
    for bad in catalog.invalid:
        label = bad.workflow_id or "(unknown id)"
        out.write(f"{label:{wide}} {'INVALID':10} {bad.source.origin:8} {bad.path}\n")
        for p in bad.problems:
            out.write(f"    {p.line()}\n")
    for bad in catalog.invalid_routines:
        out.write(f"{'(routine)':{wide}} {'INVALID':10} {bad.source.origin:8} {bad.path}\n")
        for p in bad.problems:
            out.write(f"    {p.line()}\n")
    for sh in catalog.shadowed:
        if sh.workflow.source.origin == "bundled" and sh.winner.source.origin == "library":
            out.write(
                f"replaced: bundled {sh.workflow.workflow_id} by the library's {sh.winner.path}\n"
            )
            continue
        out.write(
            f"shadowed: {sh.workflow.workflow_id} at {sh.workflow.path} (using {sh.winner.path})\n"
        )
    for warning in catalog.warnings:
        out.write(f"warning: {warning}\n")
    if not catalog.workflows and not catalog.invalid:
        out.write("no workflows found\n")
    return 0


def _job(wf: LoadedWorkflow) -> str:
    return job_of(wf.workflow_id, str(wf.definition.get("name", "")))


def _catalog_json(catalog: Catalog) -> dict[str, Any]:
    return {
        "workflows": [
            {
                "workflowId": wf.workflow_id,
                "name": wf.definition["name"],
                "version": wf.definition["version"],
                "job": _job(wf),
                "valid": True,
                "source": _source_json(wf.source.origin, wf.source.kind, wf.source.ref),
                "path": str(wf.path),
                "workflowHash": wf.pinned().workflow_hash(),
                "previewHash": wf.preview().workflow_hash(),
            }
            for wf in catalog.workflows.values()
        ],
        "invalid": [
            {
                "workflowId": bad.workflow_id,
                "valid": False,
                "source": _source_json(bad.source.origin, bad.source.kind, bad.source.ref),
                "path": str(bad.path),
                "problems": [p.to_json() for p in bad.problems],
            }
            for bad in catalog.invalid
        ],
        "shadowed": [
            {
                "workflowId": sh.workflow.workflow_id,
                "path": str(sh.workflow.path),
                "shadowedBy": str(sh.winner.path),
                "replacedByLibrary": sh.workflow.source.origin == "bundled"
                and sh.winner.source.origin == "library",
            }
            for sh in catalog.shadowed
        ],
        "routines": sorted(catalog.routines),
        "invalidRoutines": [
            {"path": str(bad.path), "problems": [p.to_json() for p in bad.problems]}
            for bad in catalog.invalid_routines
        ],
        "warnings": list(catalog.warnings),
    }


def _source_json(origin: str, kind: str, ref: str) -> dict[str, str]:
    return {"origin": origin, "workflowSourceKind": kind, "workflowSourceRef": ref}


def run_show(
    args: argparse.Namespace,
    out: TextIO,
    config: DiscoveryConfig,
    as_json: bool,
    report: Callable[[dict[str, Any]], int],
) -> int:
    """`report` writes an error envelope (Cli.fail): an invalid workflow is answered with
    the WORKFLOW_INVALID envelope start_workflow sends, then each file's problems."""
    catalog = discover(config)
    resolved = catalog.resolve(args.workflow_id)
    if isinstance(resolved, Failure):
        invalid = [b for b in catalog.invalid if b.workflow_id == args.workflow_id]
        if invalid:
            # imported here: engine.api loads the whole engine (0.5 s), which `validate`
            # and `workflows` never need
            from workrail.engine.api import workflow_invalid

            first = invalid[0]
            problems = [p.to_json() for p in first.problems]
            answer = workflow_invalid(args.workflow_id, str(first.path), problems)
            code = report(answer.to_envelope())
            if not as_json:
                for bad in invalid:
                    out.write(f"invalid definition at {bad.path}:\n")
                    for p in bad.problems:
                        out.write(f"    {p.code}  {p.line()}\n")
            return code
        close = did_you_mean(args.workflow_id, sorted(catalog.workflows), cutoff=0.6)
        hint = f"Did you mean {close}? " if close else ""
        suggestion = f"{hint}Run `workrail workflows` to see the available ids."
        return report(envelope("NOT_FOUND", resolved.failure().message, suggestion))
    workflow = resolved.unwrap()
    compiled = workflow.compile()
    if isinstance(compiled, Failure):
        out.write(f"cannot compile {workflow.path}: {compiled.failure().message}\n")
        out.write(f"Next: run `workrail validate {workflow.path}` and fix what it reports.\n")
        return 1
    return _show(args, workflow, compiled.unwrap(), out, as_json)


def _show(
    args: argparse.Namespace,
    workflow: LoadedWorkflow,
    compiled: CompiledWorkflow,
    out: TextIO,
    as_json: bool,
) -> int:
    pinned = compiled.pinned
    payload: dict[str, Any] = {
        "workflowId": workflow.workflow_id,
        "workflowHash": pinned.workflow_hash(),
        "previewHash": workflow.preview().workflow_hash(),
        "source": _source_json(workflow.source.origin, workflow.source.kind, workflow.source.ref),
        "path": str(workflow.path),
        "steps": _outline(compiled),
    }
    source = workflow.source_json
    for key in ("about", "examples", "validatedAgainstSpecVersion", "metricsProfile"):
        if key in source:
            payload[key] = source[key]
    if args.compiled:
        payload["compiled"] = pinned.to_json()
    if as_json:
        out.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return 0
    d = workflow.definition
    out.write(f"{d['name']} ({workflow.workflow_id} {d['version']})\n{d['description']}\n\n")
    if isinstance(d.get("about"), str):
        out.write(d["about"].rstrip() + "\n\n")
    if d.get("examples"):
        out.write("examples:\n" + "".join(f"  - {e}\n" for e in d["examples"]) + "\n")
    out.write(f"source: {workflow.source.origin} {workflow.path}\n")
    out.write(
        f"workflowHash: {payload['workflowHash']}\npreviewHash:  {payload['previewHash']}\n\n"
    )
    for line in _outline_lines(compiled):
        out.write(line + "\n")
    if args.compiled:
        out.write("\n" + json.dumps(pinned.to_json(), indent=2, ensure_ascii=False) + "\n")
    return 0


def _outline(compiled: CompiledWorkflow) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for step in compiled.steps:
        if step.id in compiled.loop_body_ids:
            continue
        entry: dict[str, Any] = {"id": step.id, "title": step.title or step.id}
        if step.run_condition is not None:
            entry["runCondition"] = step.run_condition
        if isinstance(step, LoopStep):
            loop = compiled.loops[step.id]
            entry["loop"] = step.loop.model_dump(by_alias=True, exclude_none=True, mode="json")
            entry["body"] = [{"id": s.id, "title": s.title or s.id} for s in loop.body]
        steps.append(entry)
    return steps


def _outline_lines(compiled: CompiledWorkflow) -> list[str]:
    lines: list[str] = []
    for n, entry in enumerate(_outline(compiled), start=1):
        cond = "  [conditional]" if "runCondition" in entry else ""
        lines.append(f"{n:2}. {entry['id']}: {entry['title']}{cond}")
        if "loop" in entry:
            loop = entry["loop"]
            lines.append(f"    loop {loop['type']} (max {loop['maxIterations']})")
            lines.extend(f"      - {b['id']}: {b['title']}" for b in entry["body"])
    return lines
