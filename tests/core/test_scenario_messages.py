"""A scenario's validation word for word and at each bound on both sides, the tables written
back as TOML text, shards of every size, form input checked field by field, and how epochs and
an explicit step count decide a run's length when a form changes one of them."""

from __future__ import annotations

import pytest

from ddp_viz.model.dataspec import DataSpec, TrainSpec
from ddp_viz.model.scenario import (
    Scenario,
    ScenarioError,
    epoch_steps,
    field_errors,
    keys,
)

FOUR = {"x": [1.0, 2.0, 3.0, 4.0], "y": [3.0, 5.0, 7.0, 9.0]}
ALLOWED = ", ".join(keys())


def refused(data: dict) -> tuple[str, str]:
    with pytest.raises(ScenarioError) as caught:
        Scenario.from_mapping(data)
    return caught.value.field, caught.value.message


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"world_size": 0}, "world_size", "must be between 1 and 8, got 0"),
        ({"world_size": 9}, "world_size", "must be between 1 and 8, got 9"),
        ({"steps": 0}, "steps", "must be between 1 and 100,000, got 0"),
        ({"steps": 100_001}, "steps", "must be between 1 and 100,000, got 100001"),
        ({"lr": 0}, "lr", "must be greater than 0, got 0"),
        ({"lr": -0.25}, "lr", "must be greater than 0, got -0.25"),
        ({"x": [], "y": []}, "x", "needs at least one data row"),
        ({"x": [1.0] * 10_001, "y": [1.0] * 10_001}, "x", "at most 10000 rows, got 10001"),
        ({"y": [1.0, 2.0]}, "y", "needs one value per x row: 4 x, 2 y"),
        ({"x": "1 2 3 4 5"}, "y", "needs one value per x row: 5 x, 4 y"),
        ({"x": 3}, "x", "must be a list of numbers, one per data row"),
        ({"y": b"12"}, "y", "must be a list of numbers, one per data row"),
        ({"x": [1, 2, "three", 4]}, "x[2]", "must be a number, got 'three'"),
        (
            {"world_size": 5},
            "world_size",
            "5 ranks need at least 5 data rows (every rank needs a shard); there are 4",
        ),
        ({"zeta": 1, "alpha": 2}, "alpha", f"unknown key; allowed keys are {ALLOWED}"),
        (
            {"data": {"batch_size": 2}},
            "data.batch_size",
            'batches come from a sampler: set [data] sampler = "distributed" (contiguous blocks '
            "train on the whole block every step)",
        ),
    ],
)
def test_each_bad_value_is_refused_in_so_many_words(changes, field, message) -> None:
    assert refused(FOUR | changes) == (field, message)


def test_each_bound_itself_is_allowed() -> None:
    assert Scenario.from_mapping(FOUR | {"world_size": 1, "steps": 1}).world_size == 1
    big = {"x": [1.0] * 8, "y": [1.0] * 8, "world_size": 8, "steps": 100_000}
    assert Scenario.from_mapping(big).steps == 100_000
    assert Scenario.from_mapping(FOUR | {"world_size": 4}).shards() == [[0], [1], [2], [3]]
    rows = {"x": [1.0] * 10_000, "y": [1.0] * 10_000}
    assert Scenario.from_mapping(rows).rows == 10_000
    assert Scenario.from_mapping(FOUR | {"lr": 1e-12}).lr == 1e-12
    assert Scenario.from_mapping({"x": [1.0], "y": [2.0], "world_size": 1}).rows == 1


EPOCHS = {
    "x": [float(i) for i in range(7)],
    "y": [0.0] * 7,
    "world_size": 3,
    "data": {"sampler": "distributed", "batch_size": 1, "epochs": 2},
}  # 3 rows a rank, 3 batches an epoch, 6 in two epochs


def test_epochs_set_the_length_and_a_wrong_steps_is_told_how_it_is_counted() -> None:
    assert Scenario.from_mapping(EPOCHS).steps == 6
    assert Scenario.from_mapping(EPOCHS | {"train": {"accumulate": 4}}).steps == 1
    assert refused(EPOCHS | {"steps": 5}) == (
        "steps",
        "[data] epochs = 2 makes this run 6 steps long (3 batches per epoch); leave steps out "
        "or change epochs",
    )
    assert refused(EPOCHS | {"steps": 2, "train": {"accumulate": 2}}) == (
        "steps",
        "[data] epochs = 2 makes this run 3 steps long (3 batches per epoch, 2 per optimizer "
        "step); leave steps out or change epochs",
    )
    assert refused(EPOCHS | {"train": {"accumulate": 7}}) == (
        "train.accumulate",
        "[data] epochs = 2 give each rank 6 batches, fewer than the 7 micro-batches of one "
        "optimizer step",
    )
    assert Scenario.from_mapping(EPOCHS | {"train": {"accumulate": 6}}).steps == 1


def test_epoch_steps_leave_a_tail_of_fewer_than_accumulate_batches_unstepped() -> None:
    data = DataSpec("distributed", batch_size=1, epochs=2)
    assert epoch_steps(data, TrainSpec(accumulate=1), 7, 3) == 6
    assert epoch_steps(data, TrainSpec(accumulate=4), 7, 3) == 1
    assert epoch_steps(data, TrainSpec(accumulate=3), 7, 3) == 2


def test_a_forms_change_keeps_the_epochs_unless_it_names_the_steps() -> None:
    s = Scenario.from_mapping(EPOCHS)
    assert s.with_changes(world_size=1).steps == 14  # 7 batches an epoch now
    assert s.with_changes(world_size="7").steps == 2
    explicit = s.with_changes(steps=4)
    assert explicit.steps == 4 and explicit.data.epochs == 0
    both = s.with_changes(steps=6, data={**s.data.to_dict(), "epochs": 2})
    assert both.steps == 6 and both.data.epochs == 2
    plain = Scenario.from_mapping(FOUR)
    assert plain.with_changes(world_size=4).steps == 1  # no epochs: steps stay
    assert plain.with_changes(steps=None, lr="0.5") == Scenario.from_mapping(FOUR | {"lr": 0.5})


def test_shards_are_blocks_the_first_ones_a_row_longer() -> None:
    s = Scenario.from_mapping({"x": [0.0] * 8, "y": [0.0] * 8, "world_size": 3})
    assert s.shards() == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert not s.equal_shards and s.rows == 8
    assert Scenario.from_mapping(FOUR | {"world_size": 2}).equal_shards


def test_the_toml_text_of_a_scenario_line_by_line() -> None:
    s = Scenario.from_mapping(
        FOUR | {"world_size": 2, "steps": 3, "lr": 0.5, "init_weight": 1, "init_bias": -2}
    )
    assert s.to_toml() == (
        "x = [1.0, 2.0, 3.0, 4.0]\n"
        "y = [3.0, 5.0, 7.0, 9.0]\n"
        "world_size = 2\n"
        "steps = 3\n"
        "lr = 0.5\n"
        "init_weight = 1.0\n"
        "init_bias = -2.0\n"
        '\n[model]\nkind = "linear"\n'
        "\n[ddp]\nbucket_cap_mb = 25.0\nforward_sync_buffers = true\n"
        "find_unused_parameters = false\n"
        '\n[data]\nsampler = "contiguous"\nshuffle = true\nseed = 0\ndrop_last = false\n'
        "batch_size = 0\nepochs = 0\nset_epoch = true\n"
        '\n[train]\nloss_reduction = "mean"\naccumulate = 1\nno_sync = "none"\n'
        "scale_loss = true\ncheckpoint = false\noverlap_cost = false\n"
        '\n[launch]\ninit_method = "file"\n'
    )
    mlp = Scenario.from_mapping(FOUR | {"model": {"kind": "mlp", "hidden": [4, 3]}})
    assert '\n[model]\nkind = "mlp"\nhidden = [4, 3]\nactivation = "tanh"\n' in mlp.to_toml()


def test_the_event_form_has_every_key_and_table() -> None:
    d = Scenario.from_mapping(FOUR | {"steps": 2}).to_dict()
    assert list(d)[:12] == list(keys())[:12]
    assert d["x"] == [1.0, 2.0, 3.0, 4.0] and type(d["x"]) is list and type(d["y"]) is list
    assert d["steps"] == 2 and d["launch"] == {"init_method": "file"}
    assert d["train"]["accumulate"] == 1 and d["data"]["sampler"] == "contiguous"
    assert d["model"] == {"kind": "linear"} and d["ddp"]["bucket_cap_mb"] == 25.0
    assert Scenario.from_mapping(d) == Scenario.from_mapping(FOUR | {"steps": 2})


def test_form_input_marks_each_bad_cell_and_field_then_the_rules_between_them() -> None:
    errors = field_errors(
        FOUR
        | {
            "x": [1, "a", 3, "b"],
            "y": ["c", 5, 7, 9],
            "world_size": 0,
            "lr": 0,
            "colour": "red",
        }
    )
    assert errors == {
        "x[1]": "must be a number, got 'a'",
        "x[3]": "must be a number, got 'b'",
        "y[0]": "must be a number, got 'c'",
        "world_size": "must be between 1 and 8, got 0",
        "lr": "must be greater than 0, got 0",
        "colour": f"unknown key; allowed keys are {ALLOWED}",
    }
    assert field_errors(FOUR | {"x": [], "y": []}) == {"x": "needs at least one data row"}
    # each field alone is fine: the first rule between them is named
    assert field_errors(FOUR | {"y": [1.0]}) == {"y": "needs one value per x row: 4 x, 1 y"}
    assert field_errors(FOUR | {"x": "1 2 3"}) == {"y": "needs one value per x row: 3 x, 4 y"}
    assert field_errors(FOUR | {"steps": "x"}) == {"steps": "must be a whole number, got 'x'"}
    assert field_errors(FOUR) == {}


def test_a_kinds_table_sets_the_length_and_a_run_that_trains_nothing_skips_the_rows() -> None:
    ring = {"world_size": 4, "collective": {"length": 10}}
    s = Scenario.from_mapping(ring)
    assert s.steps == 6  # the ring's 2 * (4 - 1) steps
    assert not s.trains and s.table("collective") is s.kinds["collective"]
    assert s.table("uneven") is None and "collective" not in s.to_dict()["train"]
    assert s.to_dict()["collective"]["length"] == 10
    assert s.to_toml().endswith(
        '\n[launch]\ninit_method = "file"\n'
        "\n[collective]\nlength = 10\nseed = 0\nsweep = [1000, 10000, 100000, 1000000]\n"
        "repeats = 3\n"
    )
    # a length said outright is kept, and the kind says it is wrong
    assert refused(ring | {"steps": 3}) == (
        "steps",
        "a ring all-reduce over 4 ranks takes 6 steps; leave steps out",
    )
    assert s.with_changes(world_size=2).steps == 2  # the ring's length at the new size
    with pytest.raises(ScenarioError) as caught:
        s.with_changes(world_size="3", steps=5)
    assert caught.value.message == "a ring all-reduce over 3 ranks takes 4 steps; leave steps out"
    # four rows and eight ranks: a run that trains nothing needs no shard a rank
    assert Scenario.from_mapping(ring | {"world_size": 8}).steps == 14
    assert Scenario.from_mapping(FOUR).trains
