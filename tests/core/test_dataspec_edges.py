"""[data] and [train] at their edges: every range's bounds on both sides naming the field, the
sampler's arithmetic worked by hand (DistributedSampler's padding and drop_last), the epochs a
run that `steps` sets still reaches, and the kinds' flags read and written back."""

from __future__ import annotations

import pytest

from ddp_viz.model.dataspec import DataSpec, TrainSpec, with_run_epochs
from ddp_viz.model.errors import ScenarioError


@pytest.mark.parametrize(
    ("key", "good", "bad"),
    [
        ("seed", [0, 2**31 - 1], [-1, 2**31]),
        ("batch_size", [0, 10_000], [-1, 10_001]),
        ("epochs", [0, 1000], [-1, 1001]),
    ],
)
def test_each_whole_number_of_data_is_taken_at_its_bounds_and_refused_past_them(
    key, good, bad
) -> None:
    for value in good:
        assert getattr(DataSpec.from_mapping({key: value}), key) == value
    for value in bad:
        with pytest.raises(ScenarioError) as caught:
            DataSpec.from_mapping({key: value})
        assert caught.value.field == f"data.{key}"


def test_each_flag_and_the_sampler_of_data_are_read_under_their_own_name() -> None:
    spec = DataSpec.from_mapping(
        {"sampler": "distributed", "shuffle": False, "drop_last": True, "set_epoch": False}
    )
    assert spec == DataSpec("distributed", False, 0, True, 0, 0, False)
    assert spec.distributed and not DataSpec().distributed
    assert DataSpec.from_mapping({"seed": 7, "batch_size": 3, "epochs": 2}).to_dict() == {
        "sampler": "contiguous",
        "shuffle": True,
        "seed": 7,
        "drop_last": False,
        "batch_size": 3,
        "epochs": 2,
        "set_epoch": True,
    }
    for key in ("shuffle", "drop_last", "set_epoch"):
        with pytest.raises(ScenarioError) as caught:
            DataSpec.from_mapping({key: "maybe"})
        assert caught.value.field == f"data.{key}"


@pytest.mark.parametrize(
    ("rows", "world", "padded", "dropped"),
    [
        (5, 2, 3, 2),  # padded to 6; cut to 4
        (6, 3, 2, 2),  # divides: drop_last changes nothing
        (7, 3, 3, 2),  # padded to 9; cut to 6
        (10, 3, 4, 3),
        (2, 4, 1, 0),  # fewer rows than ranks: cut to nothing
    ],
)
def test_a_ranks_share_is_distributed_samplers_num_samples(rows, world, padded, dropped) -> None:
    assert DataSpec("distributed").per_rank(rows, world) == padded
    assert DataSpec("distributed", drop_last=True).per_rank(rows, world) == dropped
    assert DataSpec(drop_last=True).per_rank(rows, world) == padded  # blocks: nothing dropped


def test_an_epoch_is_as_many_steps_as_batches_in_a_share() -> None:
    assert DataSpec("distributed", batch_size=2).steps_per_epoch(7, 3) == 2  # 3 rows: 2 + 1
    assert DataSpec("distributed", batch_size=3).steps_per_epoch(7, 3) == 1
    assert DataSpec("distributed", batch_size=4).steps_per_epoch(7, 3) == 1
    assert DataSpec("distributed", batch_size=1).steps_per_epoch(7, 3) == 3
    assert DataSpec("distributed").steps_per_epoch(7, 3) == 1  # the whole share at once
    assert DataSpec("distributed", drop_last=True, batch_size=2).steps_per_epoch(2, 4) == 1
    assert DataSpec("distributed", batch_size=1, epochs=4).run_steps(7, 3) == 12
    assert DataSpec("distributed", batch_size=2, epochs=0).run_steps(7, 3) == 0


def scenario(steps: int, accumulate: int = 1, world: int = 3, **data) -> dict:
    return {
        "x": [0.0] * 7,
        "world_size": world,
        "steps": steps,
        "train": {"accumulate": accumulate},
        "data": {"sampler": "distributed", "batch_size": 1, **data},
    }


@pytest.mark.parametrize(
    ("steps", "accumulate", "epochs"),
    [
        (1, 1, 1),
        (3, 1, 1),  # 3 batches an epoch: one epoch exactly
        (4, 1, 2),  # a step into the second
        (4, 2, 3),  # 8 micro-batches: into the third
        (0, 1, 1),  # at least one
    ],
)
def test_a_run_that_steps_sets_reaches_the_epochs_its_micro_batches_do(
    steps, accumulate, epochs
) -> None:
    values = scenario(steps, accumulate)
    out = with_run_epochs(values)
    assert out["data"]["epochs"] == epochs
    assert out["data"]["batch_size"] == 1 and out["steps"] == steps
    assert values["data"].get("epochs") is None  # the scenario given is left as it was


def test_the_epochs_count_with_the_world_and_defaults_when_a_key_is_missing() -> None:
    assert with_run_epochs(scenario(4, world=1))["data"]["epochs"] == 1  # 7 batches an epoch
    bare = {"x": [0.0] * 7, "data": {"sampler": "distributed", "batch_size": 1}}
    assert with_run_epochs(bare)["data"]["epochs"] == 1  # one rank, one step
    assert with_run_epochs({**bare, "world_size": 0})["data"]["epochs"] == 1
    assert with_run_epochs({**bare, "steps": 8})["data"]["epochs"] == 2


def test_epochs_already_set_or_a_table_that_does_not_read_is_left_alone() -> None:
    values = scenario(4, epochs=5)
    assert with_run_epochs(values) is values
    for broken in (
        {"steps": 4, "data": {"sampler": "random"}},
        {"steps": "many", "data": {}},
        {"steps": 4, "world_size": None, "data": {}},
        {"steps": 4, "data": "all of it"},
        {"steps": 4},
    ):
        assert with_run_epochs(broken) is broken


def test_train_reads_each_key_and_the_kinds_flags_and_writes_them_all_back() -> None:
    spec = TrainSpec.from_mapping(
        {"accumulate": 64, "scale_loss": False, "checkpoint": True, "overlap_cost": False}
    )
    assert spec.accumulate == 64 and not spec.scale_loss and spec.loss_scale == 1.0
    assert spec.flags == frozenset({"checkpoint"})
    assert spec.flag("checkpoint") and not spec.flag("overlap_cost")
    assert spec.to_dict() == {
        "loss_reduction": "mean",
        "accumulate": 64,
        "no_sync": "none",
        "scale_loss": False,
        "checkpoint": True,
        "overlap_cost": False,
    }
    assert list(spec.to_dict())[-2:] == ["checkpoint", "overlap_cost"]
    assert TrainSpec.from_mapping({"accumulate": 1}).accumulate == 1
    assert TrainSpec.from_mapping({"accumulate": 4}).loss_scale == 0.25
    assert TrainSpec.from_mapping({"loss_reduction": "sum"}).loss_reduction == "sum"
    assert TrainSpec.from_mapping({"no_sync": "backward_only"}).no_sync == "backward_only"
    with pytest.raises(ScenarioError) as caught:
        TrainSpec.from_mapping({"checkpoint": "often"})
    assert caught.value.field == "train.checkpoint"
