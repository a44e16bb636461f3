"""Dedupe-key recipes (spec 20-events §4)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from workrail.core import dedupe
from workrail.core.dedupe import DedupeKeyError, checked

S = "sess_akuobhxpaal3j6jgnpsnzywq2u"
R = "run_eva2gbpdnp6w5b4fingjvifscy"
N = "node_xsxe3tfzahmw7va62jfizcjvlu"
C = "node_wd6ntu6lsqwewpzsrrtwpzrej4"
A = "attempt_wen6s2hux7qbxfg2qwhtersgru"
E = "evt_rani4qe7mr5bt3c6cehmma7zoe"


@pytest.mark.parametrize(
    ("recipe", "expected"),
    [
        (lambda: dedupe.session_created(S), f"session_created:{S}"),
        (lambda: dedupe.run_started(S, R), f"run_started:{S}:{R}"),
        (lambda: dedupe.node_created(S, R, N), f"node_created:{S}:{R}:{N}"),
        (lambda: dedupe.checkpoint_edge(S, R, N, A), f"checkpoint:{S}:{R}:{N}:{A}"),
        (
            lambda: dedupe.checkpoint_node(S, R, N, A),
            f"checkpoint_node:checkpoint:{S}:{R}:{N}:{A}",
        ),
        (
            lambda: dedupe.acked_step_edge(S, R, N, C),
            f"edge_created:{S}:{R}:{N}->{C}:acked_step",
        ),
        (lambda: dedupe.advance_recorded(S, N, A), f"advance_recorded:{S}:{N}:{A}"),
        (lambda: dedupe.validation_performed(S, A), f"validation_performed:{S}:{A}"),
        (
            lambda: dedupe.node_output_appended(S, f"out_recap_{A}"),
            f"node_output_appended:{S}:out_recap_{A}",
        ),
        (
            lambda: dedupe.preferences_changed(S, R, N, E),
            f"preferences_changed:{S}:{R}:{N}:{E}",
        ),
        (lambda: dedupe.context_set(S, R, E), f"context_set:{S}:{R}:{E}"),
        (lambda: dedupe.decision_trace_appended(S, E), f"decision_trace_appended:{S}:{E}"),
        (lambda: dedupe.gap_recorded(S, f"gap_{A}_0"), f"gap_recorded:{S}:gap_{A}_0"),
        (
            lambda: dedupe.observation_recorded(S, "git_branch"),
            f"observation_recorded:{S}:git_branch",
        ),
    ],
)
def test_recipe(recipe: Callable[[], str], expected: str) -> None:
    assert recipe() == expected


def test_reference_keys_match_the_recipes() -> None:
    # taken verbatim from the reference session fixture
    assert (
        dedupe.advance_recorded(S, N, A)
        == "advance_recorded:sess_akuobhxpaal3j6jgnpsnzywq2u:node_xsxe3tfzahmw7va62jfizcjvlu:"
        "attempt_wen6s2hux7qbxfg2qwhtersgru"
    )
    assert (
        dedupe.decision_trace_appended(S, E)
        == "decision_trace_appended:sess_akuobhxpaal3j6jgnpsnzywq2u:evt_rani4qe7mr5bt3c6cehmma7zoe"
    )


@pytest.mark.parametrize("key", ["a", "az09_:>-", "x" * 256])
def test_checked_accepts(key: str) -> None:
    assert checked(key) == key


@pytest.mark.parametrize(
    "key",
    [
        "",
        "Upper",
        "A:b",
        "has space",
        "tab\t",
        "new\nline",
        "a/b",
        "a.b",
        "\u00e9",
        "x" * 257,
        "y" * 1000,
    ],
)
def test_checked_rejects(key: str) -> None:
    with pytest.raises(DedupeKeyError):
        checked(key)


def test_recipes_reject_bad_input() -> None:
    with pytest.raises(DedupeKeyError):
        dedupe.session_created("SESS_X")
    with pytest.raises(DedupeKeyError):
        dedupe.gap_recorded(S, "g" * 250)
    with pytest.raises(DedupeKeyError):
        dedupe.observation_recorded(S, "git branch")
    assert issubclass(DedupeKeyError, ValueError)
