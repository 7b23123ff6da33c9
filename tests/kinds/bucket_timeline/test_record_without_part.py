"""Overlap's measured cost asked of a record that holds no buckets part: a record no run has
started in yet (the window before Run) folds no kind's part, and its cost, lines and report
lines are none, not an error; a run's own part answers per rank only once that rank's cost came."""

from __future__ import annotations

from ddp_viz.kinds.bucket_timeline.overlap import overlap_lines, report_lines
from ddp_viz.kinds.bucket_timeline.record import KIND, backward_cost
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import load_recording


def test_a_record_without_the_part_has_no_cost() -> None:
    rec = RunRecord()
    assert KIND not in rec.parts
    assert backward_cost(rec, 0) is None and backward_cost(rec, 1) is None
    assert overlap_lines(rec) == [] and report_lines(rec) == []


def test_each_ranks_cost_once_it_came_and_not_before() -> None:
    events = load_recording("buckets-lesson-2-ranks.jsonl")
    costs = [i for i, e in enumerate(events) if e.kind == "backward_cost"]
    assert len(costs) == 2
    first, second = events[costs[0]], events[costs[1]]
    assert first.rank != second.rank
    before = record(events[: costs[0]])
    assert KIND in before.parts  # every run folds the part from its start
    assert backward_cost(before, 0) is None and backward_cost(before, 1) is None
    half = record(events[: costs[0] + 1])
    assert backward_cost(half, first.rank) == first
    assert backward_cost(half, second.rank) is None
    whole = record(events)
    assert backward_cost(whole, first.rank) == first
    assert backward_cost(whole, second.rank) == second
