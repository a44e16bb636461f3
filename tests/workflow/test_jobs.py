"""Job groups for the catalogue listing: read from the id's and name's words, first
matching group wins, groups in a fixed order, Other for what matches none."""

from __future__ import annotations

import pytest

from workrail.workflow.jobs import JOBS, OTHER, first_sentence, group_by_job, job_of


@pytest.mark.parametrize(
    ("workflow_id", "name", "job"),
    [
        ("wr.coding-task", "", "Build and change code"),
        ("wr.code-review", "", "Review and audit"),
        ("wr.bug-investigation", "", "Debug and investigate"),
        ("wr.performance-investigation", "", "Debug and investigate"),
        ("wr.documentation-update", "", "Write documents and tickets"),
        ("wr.task-classification", "", "Route a task"),
        ("wr.workflow-authoring", "", "Write and check workflows"),
        ("team.spike", "Investigate a design option", "Explore, research and design"),
        ("probe-flow", "Probe flow", OTHER),
    ],
)
def test_a_workflow_is_grouped_by_the_words_it_uses(workflow_id: str, name: str, job: str) -> None:
    assert job_of(workflow_id, name) == job


def test_a_stem_counts_only_at_the_start_of_a_word() -> None:
    # "investigate" holds "gate" (a review word) but does not start with it
    assert job_of("team.x", "investigate things") == OTHER


def test_groups_come_in_the_fixed_order_and_keep_their_members_order() -> None:
    ids = ["zz-other", "wr.code-review", "wr.coding-task", "wr.refactoring", "wr.audit"]
    grouped = group_by_job(ids, job_of)
    names = [name for name, _ in grouped]
    order = [name for name, _ in JOBS] + [OTHER]
    assert names == sorted(names, key=order.index)
    assert dict(grouped)["Build and change code"] == ["wr.coding-task", "wr.refactoring"]
    assert dict(grouped)[OTHER] == ["zz-other"]


def test_a_row_shows_the_first_sentence_only() -> None:
    assert first_sentence("Do the thing.  Then more.") == "Do the thing."
    long = "word " * 40
    assert len(first_sentence(long)) == 90
    assert first_sentence(long).endswith("…")
