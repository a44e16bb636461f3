"""What the catalogue shows about a workflow beyond its name: the `about` text, example
goals, the authoring-spec staleness hint and the document references, read from the
compiled definition (the same for list, inspect, the CLI and the console)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workrail.workflow.language import NEWEST_SPEC_VERSION


def catalogue_fields(definition: Mapping[str, Any]) -> dict[str, Any]:
    """`about` and `examples` when the workflow has them (nothing for a v1.4-era file)."""
    out: dict[str, Any] = {}
    if isinstance(definition.get("about"), str):
        out["about"] = definition["about"]
    if isinstance(definition.get("examples"), list):
        out["examples"] = list(definition["examples"])
    return out


def spec_version_hint(definition: Mapping[str, Any]) -> dict[str, Any] | None:
    """The authoring-spec version the author checked against, and whether it is older than
    the newest one known here."""
    version = definition.get("validatedAgainstSpecVersion")
    if not isinstance(version, int) or isinstance(version, bool):
        return None
    stale = version < NEWEST_SPEC_VERSION
    hint = (
        f"Last checked against authoring rules v{version}; v{NEWEST_SPEC_VERSION} is newer, "
        "so some guidance may be dated."
        if stale
        else f"Checked against the newest authoring rules known (v{version})."
    )
    return {
        "validatedAgainstSpecVersion": version,
        "newestKnownSpecVersion": NEWEST_SPEC_VERSION,
        "stale": stale,
        "hint": hint,
    }


def references(definition: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The workflow's document references, as handed to the agent (None when it has none,
    so answers of other workflows keep their exact shape)."""
    declared = definition.get("references")
    if not isinstance(declared, list) or not declared:
        return None
    out = []
    for ref in declared:
        if isinstance(ref, dict):
            out.append({"resolveFrom": "workspace", **ref})
    return out


def references_field(definition: Mapping[str, Any]) -> dict[str, Any]:
    """`{"references": [...]}` for a step answer, or nothing."""
    found = references(definition)
    return {} if found is None else {"references": found}
