"""What overlap hid and what backward lost, on each rank and at each step: the report's lines of
rank 0 and of the odd rank last, the medians over the steps after the first, and the edges of
the arithmetic (a bucket launched before backward began, one still running after the last
gradient, one never finished, a rank whose cost was not measured)."""

from __future__ import annotations

from dataclasses import replace
from statistics import median

import pytest

from ddp_viz.kinds.bucket_timeline.events import BackwardCost
from ddp_viz.kinds.bucket_timeline.overlap import (
    Overlap,
    backward_loss,
    hidden_per_step,
    layouts,
    overlap,
    overlap_lines,
    ready_order,
    report_lines,
)
from ddp_viz.kinds.bucket_timeline.record import BucketRecord, backward_cost
from ddp_viz.model.timeline import RankStep, record
from tests.conftest import load_recording

TWO, FOUR = "buckets-lesson-2-ranks.jsonl", "buckets-lesson-4-ranks.jsonl"


def raw_hidden(events: list, rank: int) -> tuple[list[float], list[float], list[int]]:
    """Per step after the first (1-based): each bucket span summed, and its part before the
    step's last gradient and after backward began, from the raw timing events."""
    spent, hidden, steps = [], [], []
    for t in sorted(
        (e for e in events if e.kind == "timing" and e.rank == rank and e.step > 0),
        key=lambda e: e.step,
    ):
        start, last = t.spans["backward"][0][0], max(at for _, at in t.ready)
        spans = [(b["launched"], b["finished"]) for b in t.buckets]
        spent.append(sum(b - a for a, b in spans))
        hidden.append(sum(max(0.0, min(b, last) - max(a, start)) for a, b in spans))
        steps.append(t.step + 1)
    return spent, hidden, steps


def raw_loss(events: list, rank: int) -> tuple[float, float, float, float, int]:
    cost = next(e for e in events if e.kind == "backward_cost" and e.rank == rank)
    return (
        median(p[1] - p[0] for p in cost.synced),
        median(p[1] - p[0] for p in cost.alone),
        median(p[2] - p[0] for p in cost.synced),
        median(p[2] - p[0] for p in cost.alone),
        min(len(cost.synced), len(cost.alone)),
    )


def expected_lines(events: list, rank: int) -> list[str]:
    spent, hidden, steps = raw_hidden(events, rank)
    cw, ca, tw, ta, passes = raw_loss(events, rank)
    which = f"medians, steps {steps[0]}–{steps[-1]}" if len(steps) > 1 else f"step {steps[0]}"
    return [
        f"overlap, rank {rank}: the buckets' all-reduces took {median(spent) * 1e3:.2f} ms a "
        f"step (launch to result, summed), {median(hidden) * 1e3:.2f} ms of it hidden behind "
        f"backward's computation ({which})",
        f"what backward lost, rank {rank}: from its start to the last gradient "
        f"{cw * 1e3:.2f} ms with DDP's all-reduces, {ca * 1e3:.2f} ms under no_sync() with "
        f"none ({(cw - ca) * 1e3:+.2f} ms); it returned after {tw * 1e3:.2f} ms against "
        f"{ta * 1e3:.2f} ms (medians of {passes} alternating passes after the run, no "
        "optimizer step)",
    ]


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_each_rank_of_four_reports_its_own_numbers_of_its_one_rebuilt_step(rank: int) -> None:
    """Four ranks, two steps: only step 2 counts (step 1's single bucket is rebuilt), so the
    line names that step rather than a range of medians."""
    events = load_recording(FOUR)
    rec = record(events)
    lines = overlap_lines(rec, rank)
    assert lines == expected_lines(events, rank)
    assert "(step 2)" in lines[0]
    spent, hidden, steps = raw_hidden(events, rank)
    assert steps == [2]
    assert hidden_per_step(rec, rank) == (spent[0], hidden[0], steps)


def test_the_ranks_numbers_differ_so_a_line_of_the_wrong_rank_shows() -> None:
    events = load_recording(FOUR)
    rec = record(events)
    assert len({tuple(overlap_lines(rec, r)) for r in range(4)}) == 4
    assert len({raw_loss(events, r)[:4] for r in range(4)}) == 4


def test_two_steps_after_the_first_give_medians_over_a_range() -> None:
    events = load_recording(TWO)
    rec = record(events)
    spent, hidden, steps = raw_hidden(events, 1)
    assert steps == [2, 3] and spent[0] != spent[1]
    assert hidden_per_step(rec, 1) == (median(spent), median(hidden), [2, 3])
    assert overlap_lines(rec, 1) == expected_lines(events, 1)
    assert "(medians, steps 2–3)" in overlap_lines(rec, 1)[0]


def test_the_report_gets_the_lines_and_a_blank_one_or_nothing() -> None:
    events = load_recording(TWO)
    assert report_lines(record(events)) == [*expected_lines(events, 0), ""]
    unmeasured = record([e for e in events if e.kind != "backward_cost"])
    assert report_lines(unmeasured) == [] and overlap_lines(unmeasured) == []
    assert backward_cost(unmeasured, 0) is None


def test_a_rank_whose_cost_has_not_arrived_yet_says_nothing_and_the_others_do() -> None:
    events = load_recording(FOUR)
    partial = record([e for e in events if not (e.kind == "backward_cost" and e.rank == 3)])
    assert overlap_lines(partial, 3) == [] and backward_loss(partial, 3) is None
    assert overlap_lines(partial, 2) == expected_lines(events, 2)
    # the rank's cost is its own, not the last one to arrive
    cost = backward_cost(record(events), 1)
    assert cost is not None and cost.rank == 1


def test_a_cost_with_no_pass_of_one_kind_is_no_measurement() -> None:
    events = load_recording(FOUR)
    for field in ("synced", "alone"):
        cut = [
            replace(e, **{field: []}) if e.kind == "backward_cost" and e.rank == 2 else e
            for e in events
        ]
        assert backward_loss(record(cut), 2) is None and overlap_lines(record(cut), 2) == []


def test_passes_count_the_fewer_of_the_two_kinds_and_medians_are_per_kind() -> None:
    cost = BackwardCost(1, 0, [[0, 1, 3, 4], [10, 12, 15, 4], [20, 25, 26, 4]], [[0, 2, 2.5, 0]])
    part = BucketRecord()
    part.apply(cost)
    part.apply(replace(cost, rank=1, synced=[[0, 9, 9, 4]]))
    rec = record([])
    rec.parts["bucket_timeline"] = part
    loss = backward_loss(rec, 0)
    assert loss is not None
    assert (loss.rank, loss.passes) == (0, 1)
    assert (loss.compute_synced_s, loss.compute_alone_s) == (2, 2)
    assert (loss.total_synced_s, loss.total_alone_s) == (5, 2.5)
    assert loss.lost_s == 0
    assert backward_loss(rec, 1).compute_synced_s == 9
    # no timings at all: only the cost's line
    assert overlap_lines(rec, 0)[0].startswith("what backward lost, rank 0: ")
    assert len(overlap_lines(rec, 0)) == 1


def rank_step(ready, buckets, backward=(0.0, 10.0)) -> RankStep:
    return RankStep(
        spans={"backward": [list(backward)]},
        ready=[[n, t] for n, t in ready],
        bucket_spans=[
            {"index": i, "params": p, "bytes": 4, "launched": a, "finished": b}
            for i, p, a, b in buckets
        ],
    )


def test_only_the_part_inside_backward_and_before_the_last_gradient_is_hidden() -> None:
    rs = rank_step(
        ready=[("b", 6.0), ("a", 3.0)],  # out of order: the last is the latest, not the last
        buckets=[
            (0, ["a"], 1.0, 4.0),  # launched before backward began at 2: 2 of its 3 hidden
            (1, ["b"], 5.0, 9.0),  # still running after the last gradient at 6: 1 hidden
            (2, ["c"], 7.0, 8.0),  # after the last gradient: nothing hidden, never negative
            (3, ["d"], 7.0, None),  # never finished: not counted
        ],
        backward=(2.0, 9.5),
    )
    o = overlap(rs)
    assert o == Overlap((2.0, 9.5), 6.0, 3.0 + 4.0 + 1.0, 2.0 + 1.0)
    assert o.fraction == pytest.approx(3 / 8)
    assert ready_order(rs) == ["a", "b"]


def test_no_backward_no_finished_bucket_or_no_gradient_is_no_overlap() -> None:
    full = rank_step([("a", 1.0)], [(0, ["a"], 1.0, 2.0)])
    assert overlap(full) is not None
    assert overlap(replace(full, spans={})) is None
    assert overlap(replace(full, ready=[])) is None
    unfinished = rank_step([("a", 1.0)], [(0, ["a"], 1.0, None)])
    assert overlap(unfinished) is None
    assert Overlap((0, 1), 1, 0.0, 0.0).fraction == 0.0


def test_layouts_are_rank_0s_buckets_in_index_order_and_empty_where_it_has_none() -> None:
    rec = record(load_recording(TWO))
    rs = rec.steps[1].ranks[0]
    want = [list(b["params"]) for b in sorted(rs.bucket_spans, key=lambda b: b["index"])]
    rs.bucket_spans = list(reversed(rs.bucket_spans))
    got = layouts(rec)
    assert got[1] == want and len(got) == 3
    del rec.steps[2].ranks[0]
    rec.steps[0].ranks[0].bucket_spans = []
    got = layouts(rec)
    assert got[0] == [] and got[2] == [] and got[1] == want
