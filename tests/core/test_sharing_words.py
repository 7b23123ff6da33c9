"""The rows a step trained on and, in words, why DDP's average is not one process's gradient on
them: each reason alone and together, on both sides of its condition, on records built here
(no kind's hooks unless the test gives one)."""

from __future__ import annotations

from types import SimpleNamespace

from ddp_viz.model.rank_step import RankStep
from ddp_viz.model.sharing import step_rows, unequal_shards_note, why_average_differs
from ddp_viz.model.timeline import RunRecord, StepRecord

SUM = (
    "the loss is a sum, so each rank's gradient is a sum over its rows; DDP still divides by "
    "the world size, so the average is the sum's gradient ÷ {world}{scaled}"
)
NOTHING = (
    "nothing was all-reduced: a parameter got no gradient, so DDP's bucket never filled and "
    "each rank kept its own gradient"
)
BATCH_NORM = (
    "BatchNorm normalises each rank's batch with that batch's own mean and variance, so each "
    "rank's gradient is not its share of one process's gradient on every row (SyncBatchNorm "
    "would share the statistics, but it needs a GPU or another accelerator: on CPU it raises)"
)


def averaged(rows: list[int], epoch: int = 0) -> RankStep:
    return RankStep(averaged={"w": [1.0]}, rows=rows, epoch=epoch)


def rec_of(scenario: dict, world: int = 3, kinds: list | None = None) -> RunRecord:
    rec = RunRecord(world_size=world, scenario=scenario)
    rec._kinds = list(kinds or [])
    return rec


def step(*ranks: tuple[int, RankStep]) -> StepRecord:
    return StepRecord(0, dict(ranks))


EVEN = step((2, averaged([4, 5])), (0, averaged([0, 1])), (1, averaged([2, 3])))


def test_the_rows_of_a_step_are_each_ranks_in_rank_order_with_their_epoch() -> None:
    st = step((2, averaged([7], 1)), (0, averaged([0, 0, 3], 2)), (1, averaged([], 2)))
    assert step_rows(rec_of({}), st) == [(2, 0), (2, 0), (2, 3), (1, 7)]


def test_the_first_kind_that_knows_a_ranks_rows_says_them() -> None:
    st = step((0, averaged([0, 1])), (1, averaged([2, 3])), (2, averaged([4, 5])))

    def first(rec, s, r):
        return [(9, 90 + r)] if r == 1 else None

    def second(rec, s, r):
        assert s is st and rec is record
        return [(8, 80 + r)] if r >= 1 else None

    kinds = [
        SimpleNamespace(rows_of_step=None),
        SimpleNamespace(rows_of_step=first),
        SimpleNamespace(rows_of_step=second),
    ]
    record = rec_of({}, kinds=kinds)
    assert step_rows(record, st) == [(0, 0), (0, 1), (9, 91), (8, 82)]


def test_even_shards_of_a_mean_loss_need_no_words() -> None:
    assert why_average_differs(rec_of({}), EVEN) == ""
    assert why_average_differs(rec_of({"train": {"loss_reduction": "mean"}}), EVEN) == ""


def test_a_summed_loss_is_divided_by_the_world_size() -> None:
    rec = rec_of({"train": {"loss_reduction": "sum"}}, world=3)
    assert why_average_differs(rec, EVEN) == SUM.format(world=3, scaled="")


def test_a_summed_loss_over_micro_batches_says_each_was_divided_unless_not_scaled() -> None:
    def words(train: dict) -> str:
        return why_average_differs(rec_of({"train": train}, world=4), EVEN)

    scaled = " (and each micro-batch's loss was ÷ {k})"
    sums = {"loss_reduction": "sum"}
    assert words({**sums, "accumulate": 2}) == SUM.format(world=4, scaled=scaled.format(k=2))
    assert words({**sums, "accumulate": "3"}) == SUM.format(world=4, scaled=scaled.format(k=3))
    assert words({**sums, "accumulate": 3, "scale_loss": True}) == SUM.format(
        world=4, scaled=scaled.format(k=3)
    )
    assert words({**sums, "accumulate": 3, "scale_loss": False}) == SUM.format(world=4, scaled="")
    assert words({**sums, "accumulate": 1}) == SUM.format(world=4, scaled="")
    assert words({"accumulate": 3}) == ""  # a mean loss: nothing to say


def test_a_step_nothing_was_averaged_in_says_only_that() -> None:
    st = step((0, RankStep(rows=[0])), (1, RankStep(rows=[1, 2])))
    rec = rec_of({"train": {"loss_reduction": "sum"}, "model": {"norm": "batch"}}, world=2)
    assert why_average_differs(rec, st) == NOTHING
    one_averaged = step((0, RankStep(rows=[0])), (1, averaged([1])))
    assert why_average_differs(rec_of({}, world=2), one_averaged) == ""
    assert why_average_differs(rec_of({}, world=2), step()) == ""  # no rank yet: no claim


def test_batch_norm_is_a_reason_only_with_more_than_one_rank() -> None:
    assert why_average_differs(rec_of({"model": {"norm": "batch"}}, world=2), EVEN) == BATCH_NORM
    assert why_average_differs(rec_of({"model": {"norm": "batch"}}, world=1), EVEN) == ""
    assert why_average_differs(rec_of({"model": {"norm": "layer"}}, world=2), EVEN) == ""


def test_batches_of_different_sizes_are_named_in_rank_order() -> None:
    st = step((1, averaged([2, 3, 4])), (0, averaged([0, 1])), (2, averaged([])))
    assert why_average_differs(rec_of({}), st) == (
        "the ranks' batches hold [2, 3] rows and DDP weighs each rank's mean equally"
    )


def test_a_kinds_reasons_come_after_the_cores_and_before_the_batch_sizes() -> None:
    st = step((0, averaged([0])), (1, averaged([1, 2])))
    kinds = [
        SimpleNamespace(differs=None),
        SimpleNamespace(differs=lambda rec, s: ["row 3 twice", "row 4 twice"]),
    ]
    rec = rec_of({"train": {"loss_reduction": "sum"}, "model": {"norm": "batch"}}, 2, kinds)
    assert why_average_differs(rec, st) == "; ".join(
        [
            SUM.format(world=2, scaled=""),
            BATCH_NORM,
            "row 3 twice",
            "row 4 twice",
            "the ranks' batches hold [1, 2] rows and DDP weighs each rank's mean equally",
        ]
    )


def test_shards_of_one_size_need_no_note_and_others_are_named() -> None:
    assert unequal_shards_note([4, 4, 4]) == ""
    assert unequal_shards_note([4]) == ""
    assert unequal_shards_note([]) == ""
    assert unequal_shards_note([3, 5, 5]) == (
        "shards hold 3, 5, 5 rows: DDP averages each rank's mean-loss gradient equally, so a "
        "row on a small shard weighs more than a row on a large one; the result is not the "
        "full-batch gradient"
    )
