"""The not-averaged record folded from hand-made events where its code branches: three ranks
with the odd one last (a buffer it lacks, a value off), a query before the last rank reported,
timings on one side only, and a run of another kind. Expected figures are worked out here."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.not_averaged import events as se
from ddp_viz.kinds.not_averaged.record import NotAveragedRecord, part
from ddp_viz.kinds.not_averaged.report import cost_line, count_line, report_lines
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import load_recording

MEAN, VAR = "bn.running_mean", "bn.running_var"


def _buffers(rank: int, before: dict, after: dict | None = None) -> se.BufferValues:
    return se.BufferValues(run=1, step=2, rank=rank, before=before, after=after or before)


def test_a_buffer_the_last_rank_lacks_differs_and_the_gap_is_the_others_largest() -> None:
    """Rank 1's mean is 0.25 off rank 0's; rank 2 has no running_var at all: both differ, by
    up to 0.25 (a missing buffer adds no gap of its own)."""
    part_ = NotAveragedRecord()
    same = {MEAN: [0.5, 1.0], VAR: [2.0, 3.0]}
    part_.apply(_buffers(0, same))
    part_.apply(_buffers(1, {MEAN: [0.5, 1.25], VAR: [2.0, 3.0]}))
    assert part_.agreement(2, 3, "before") is None  # rank 2 has not reported yet
    part_.apply(_buffers(2, {MEAN: [0.5, 1.0]}, after=same))
    got = part_.agreement(2, 3, "before")
    assert got is not None
    assert (got.same, got.differing, got.max_diff) == (False, [MEAN, VAR], 0.25)
    after = part_.agreement(2, 3, "after")
    assert after is not None and (after.same, after.differing) == (False, [MEAN])


def test_a_buffer_only_the_last_rank_lacks_counts_as_differing_by_nothing_measured() -> None:
    part_ = NotAveragedRecord()
    for r in (0, 1):
        part_.apply(_buffers(r, {MEAN: [0.5], VAR: [2.0]}))
    part_.apply(_buffers(2, {MEAN: [0.5]}))
    got = part_.agreement(2, 3, "before")
    assert got is not None and (got.same, got.differing, got.max_diff) == (False, [VAR], 0.0)


def _cost(rank: int, with_flag, without, counts_with=(), counts_without=()) -> se.UnusedCost:
    return se.UnusedCost(
        run=1,
        rank=rank,
        with_flag=list(with_flag),
        without_flag=list(without),
        allreduces_with=[list(s) for s in counts_with],
        allreduces_without=[list(s) for s in counts_without],
    )


def test_the_cost_is_the_median_of_every_rank_s_samples_in_ms() -> None:
    """Three ranks, the slowest last: the medians of all nine samples each way."""
    part_ = NotAveragedRecord()
    part_.apply(_cost(0, [0.010, 0.012, 0.011], [0.008, 0.009, 0.0085]))
    part_.apply(_cost(1, [0.013, 0.0105, 0.0115], [0.0095, 0.0082, 0.0088]))
    part_.apply(_cost(2, [0.030, 0.031, 0.029], [0.020, 0.021, 0.019]))
    # sorted with-flag: .0105 .010 .011 .0115 .012 .013 .029 .030 .031 → the 5th, 0.012
    # sorted without: .008 .0082 .0085 .0088 .009 .0095 .019 .020 .021 → the 5th, 0.009
    with_ms, without_ms = part_.cost_ms() or (0.0, 0.0)
    assert with_ms == pytest.approx(12.0, rel=1e-12)
    assert without_ms == pytest.approx(9.0, rel=1e-12)


def test_timings_or_counts_on_one_side_only_say_nothing() -> None:
    part_ = NotAveragedRecord()
    part_.apply(_cost(0, [0.010, 0.012], [], counts_with=[[["float", 4], ["int", 1]]]))
    assert part_.cost_ms() is None and part_.allreduce_counts() is None
    other = NotAveragedRecord()
    other.apply(_cost(0, [], [0.009], counts_without=[[["float", 4]]]))
    assert other.cost_ms() is None and other.allreduce_counts() is None


def test_a_record_without_the_part_reads_an_empty_one_and_has_no_lines() -> None:
    """Before its run started a record holds no part of any kind: no line, no error."""
    rec = RunRecord()
    assert "not_averaged" not in rec.parts
    empty = part(rec)
    assert isinstance(empty, NotAveragedRecord) and empty.cost == {} and empty.buffers == {}
    assert report_lines(rec) == [] and cost_line(rec) == "" and count_line(rec) == ""
    ring = record(load_recording("ring-4-ranks.jsonl"))  # a run that folds it, empty
    assert report_lines(ring) == [] and part(ring).saved is None
