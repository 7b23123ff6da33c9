"""[data] and [train] in a scenario: validation that names the field, and the run's length."""

from __future__ import annotations

import pytest

from ddp_viz.model.dataspec import DataSpec
from ddp_viz.model.scenario import Scenario, ScenarioError, field_errors

ROWS = {"x": [1.0, 2.0, 3.0, 4.0, 5.0], "y": [1.0, 2.0, 3.0, 4.0, 5.0], "world_size": 2}


def load(**tables) -> Scenario:
    return Scenario.from_mapping({**ROWS, **tables})


@pytest.mark.parametrize(
    ("tables", "field"),
    [
        ({"data": {"sampler": "random"}}, "data.sampler"),
        ({"data": {"shuffle": "yes"}}, "data.shuffle"),
        ({"data": {"batch_size": -1}}, "data.batch_size"),
        ({"data": {"batch_size": 1.5}}, "data.batch_size"),
        ({"data": {"epochs": 5000}}, "data.epochs"),
        ({"data": {"colour": 1}}, "data.colour"),
        ({"data": {"batch_size": 2}}, "data.batch_size"),  # contiguous blocks have no batches
        ({"train": {"loss_reduction": "max"}}, "train.loss_reduction"),
        ({"data": {"sampler": "distributed", "epochs": 2}, "steps": 5}, "steps"),
        ({"train": {"accumulate": 0}}, "train.accumulate"),
        ({"train": {"accumulate": 65}}, "train.accumulate"),
        ({"train": {"accumulate": 2.5}}, "train.accumulate"),
        ({"train": {"no_sync": "forward"}}, "train.no_sync"),
        ({"train": {"scale_loss": "sometimes"}}, "train.scale_loss"),
        # 3 batches an epoch, 2 epochs: six micro-batches are fewer than one step of eight
        (
            {
                "data": {"sampler": "distributed", "batch_size": 1, "epochs": 2},
                "train": {"accumulate": 8},
            },
            "train.accumulate",
        ),
    ],
)
def test_bad_values_name_their_field(tables, field) -> None:
    with pytest.raises(ScenarioError) as err:
        load(**tables)
    assert err.value.field == field
    assert field_errors({**ROWS, **tables}).keys() == {field}


def test_epochs_fix_the_length_from_the_sampler_s_arithmetic() -> None:
    # 5 rows, 2 ranks: DistributedSampler pads to 6, 3 rows each, batches of 2: 2 steps an epoch
    s = load(data={"sampler": "distributed", "batch_size": 2, "epochs": 3})
    assert s.steps == 6 and s.data.per_rank(5, 2) == 3
    # drop_last cuts to 2 rows each: one batch per epoch
    s = load(data={"sampler": "distributed", "batch_size": 2, "epochs": 3, "drop_last": True})
    assert s.steps == 3 and s.data.per_rank(5, 2) == 2
    assert load(data={"sampler": "distributed", "epochs": 2}).steps == 2  # whole share a step


def test_with_accumulation_every_k_batches_make_one_step() -> None:
    # 5 rows on 2 ranks: 3 rows each, batches of 1: 3 batches an epoch; 2 epochs: 6 batches
    data = {"sampler": "distributed", "batch_size": 1, "epochs": 2}
    assert load(data=data).steps == 6
    s = load(data=data, train={"accumulate": 3, "no_sync": "backward_only"})
    assert s.steps == 2 and s.train.loss_scale == pytest.approx(1 / 3)
    assert load(data=data, train={"accumulate": 3, "scale_loss": False}).train.loss_scale == 1
    assert load(data=data, train={"accumulate": 4}).steps == 1  # six batches: the last 2 unused
    # a new world size keeps the epochs: 5 rows on 1 rank are 5 batches an epoch, 10 in all
    assert s.with_changes(world_size=1, train={**s.train.to_dict(), "accumulate": 5}).steps == 2


def test_the_tables_round_trip_through_toml_and_the_event_form(tmp_path) -> None:
    s = load(
        data={"sampler": "distributed", "batch_size": 2, "epochs": 2, "set_epoch": False},
        train={"loss_reduction": "sum", "accumulate": 2, "no_sync": "backward_only"},
    )
    path = tmp_path / "s.toml"
    path.write_text(s.to_toml())
    assert Scenario.load(path) == s == Scenario.from_mapping(s.to_dict())
    assert DataSpec().to_dict()["sampler"] == "contiguous"
