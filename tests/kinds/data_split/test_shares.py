"""Which rank trained on which row, epoch by epoch, as the ranks reported it (pure): rows given
to two ranks in one epoch (the sampler's padding), rows no rank got (``drop_last``), the steps
of each epoch, queried mid-run, and the padding as a reason in words for one, two and three
repeated rows. The runs are written here, rank by rank, so every expectation is by hand."""

from __future__ import annotations

from ddp_viz.kinds.data_split.shares import epochs, repeats_reason, step_repeats
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord

ROWS = 8
WHY = "went to two ranks (the sampler repeats rows so every rank gets as many), so DDP counts"


def run(steps: list[dict[int, tuple[int, list[int]]]]) -> RunRecord:
    """3 ranks; ``steps[s][rank] = (epoch, rows)`` (a rank left out reported nothing)."""
    rec = RunRecord()
    scenario = {"x": [float(i) for i in range(ROWS)], "data": {"sampler": "distributed"}}
    params = [{"name": "weight", "shape": [1, 1]}]
    rec.apply(protocol.RunStarted(1, 3, len(steps), scenario, params=params))
    for s, ranks in enumerate(steps):
        for r, (epoch, rows) in ranks.items():
            g = {"weight": [float(r)]}
            rec.apply(protocol.LocalGrad(1, s, r, 0.5, g, [["weight"]], rows, epoch))
    return rec


RUN = [
    {0: (0, [0, 3]), 1: (0, [1, 4]), 2: (0, [2, 5])},
    {0: (0, [6]), 1: (0, [7]), 2: (0, [0])},  # epoch 1 padded: row 1 (0) again, on rank 2
    {0: (1, [5, 1]), 1: (1, [2, 6]), 2: (1, [3, 0])},  # epoch 2 begins
    {0: (1, [4, 4]), 1: (1, [7, 2]), 2: (2, [1, 2])},  # rank 2 already in epoch 3
]


def test_each_epoch_holds_who_took_each_row_and_its_steps() -> None:
    rec = run(RUN)
    first, second, third = epochs(rec)
    assert (first.epoch, second.epoch, third.epoch) == (0, 1, 2)
    assert first.steps == [0, 1] and second.steps == [2, 3] and third.steps == [3]
    assert first.takers == {
        0: [(0, 0), (2, 1)], 3: [(0, 0)], 1: [(1, 0)], 4: [(1, 0)], 2: [(2, 0)], 5: [(2, 0)],
        6: [(0, 1)], 7: [(1, 1)],
    }  # fmt: skip
    assert first.repeated() == [0] and first.missing(ROWS) == []
    assert second.takers[4] == [(0, 3), (0, 3)] and second.takers[2] == [(1, 2), (1, 3)]
    assert second.repeated() == [2, 4]
    assert second.missing(ROWS) == []
    assert third.takers == {1: [(2, 3)], 2: [(2, 3)]}
    assert third.missing(ROWS) == [0, 3, 4, 5, 6, 7]


def test_an_epoch_asked_for_mid_run_holds_the_steps_so_far() -> None:
    rec = run(RUN)
    assert [e.epoch for e in epochs(rec, 0)] == [0]
    (first,) = epochs(rec, 0)
    assert first.steps == [0] and first.repeated() == [] and first.missing(ROWS) == [6, 7]
    first, second = epochs(rec, 2)
    assert first.steps == [0, 1] and second.steps == [2]
    assert second.missing(ROWS) == [4, 7]
    assert [e.epoch for e in epochs(rec)] == [e.epoch for e in epochs(rec, 3)] == [0, 1, 2]
    assert len(epochs(rec, 99)) == 3


def test_a_rank_that_reported_no_rows_and_no_loss_takes_no_place() -> None:
    rec = run(RUN[:1])
    rec.apply(protocol.Timing(1, 0, 1, {"forward": [[0.0, 1.0]]}))
    rec.steps[0].ranks[1].rows, rec.steps[0].ranks[1].loss = [], None
    (share,) = epochs(rec)
    assert 1 not in share.takers and 4 not in share.takers
    assert share.takers[2] == [(2, 0)] and share.takers[5] == [(2, 0)]  # the ranks after it
    # a rank with a loss and no rows (an empty batch) still makes the step part of its epoch
    rec = run([{0: (0, [])}, {0: (1, [])}])
    assert [(e.epoch, e.steps, e.takers) for e in epochs(rec)] == [(0, [0], {}), (1, [1], {})]


def test_rows_repeated_in_one_step_are_the_steps_repeats_and_the_reason() -> None:
    rec = run(RUN)
    # step 2: every row once; step 4: row 5 (4) twice on rank 0, row 3 (2) on ranks 1 and 2
    # but in two epochs (1 and 2): not a repeat
    assert step_repeats(rec, rec.steps[2]) == []
    assert repeats_reason(rec, rec.steps[2]) == []
    assert step_repeats(rec, rec.steps[3]) == [4]
    assert repeats_reason(rec, rec.steps[3]) == [f"row 5 {WHY} it twice"]


def test_the_reason_names_two_rows_and_three() -> None:
    rec = run([{0: (0, [1, 6]), 1: (0, [6, 1]), 2: (0, [2, 3])}])
    assert step_repeats(rec, rec.steps[0]) == [1, 6]
    assert repeats_reason(rec, rec.steps[0]) == [f"rows 2 and 7 {WHY} them twice"]
    rec = run([{0: (0, [7, 0]), 1: (0, [0, 3]), 2: (0, [3, 7])}])
    assert step_repeats(rec, rec.steps[0]) == [0, 3, 7]
    assert repeats_reason(rec, rec.steps[0]) == [f"rows 1, 4 and 8 {WHY} them twice"]
