"""Scenario loading and validation (pure: no Qt, no torch)."""

from __future__ import annotations

import math

import pytest

from ddp_viz.model.scenario import Scenario, ScenarioError, default_scenario


def test_default_scenario_is_the_lesson() -> None:
    s = default_scenario()
    assert s.x == (1, 2, 3, 4) and s.y == (3, 5, 7, 9)
    assert (s.world_size, s.steps, s.lr, s.init_weight, s.init_bias) == (2, 1, 0.01, 0.5, 0.0)
    assert s.shards() == [[0, 1], [2, 3]]
    assert s.equal_shards


@pytest.mark.parametrize(
    ("rows", "ws", "expected"),
    [
        (4, 1, [[0, 1, 2, 3]]),
        (4, 4, [[0], [1], [2], [3]]),
        (4, 3, [[0, 1], [2], [3]]),
        (7, 3, [[0, 1, 2], [3, 4], [5, 6]]),
    ],
)
def test_contiguous_shards(rows: int, ws: int, expected: list[list[int]]) -> None:
    s = Scenario(x=tuple(range(rows)), y=tuple(range(rows)), world_size=ws)
    assert s.shards() == expected
    assert s.equal_shards == (rows % ws == 0)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"x": [1, 2], "y": [1]}, "y", "one value per x row"),
        ({"x": [], "y": []}, "x", "at least one data row"),
        ({"x": [1, "a"]}, "x[1]", "must be a number"),
        ({"y": [1, 2, 3, math.nan]}, "y[3]", "finite"),
        ({"y": [1, 2, 3, math.inf]}, "y[3]", "finite"),
        ({"world_size": 0}, "world_size", "between 1 and 8"),
        ({"world_size": 9}, "world_size", "between 1 and 8"),
        ({"world_size": 5}, "world_size", "at least 5 data rows"),
        ({"world_size": 1.5}, "world_size", "whole number"),
        ({"world_size": True}, "world_size", "whole number"),
        ({"steps": 0}, "steps", "between 1 and 100,000"),
        ({"steps": 100_001}, "steps", "between 1 and 100,000"),
        ({"lr": 0}, "lr", "greater than 0"),
        ({"lr": -0.1}, "lr", "greater than 0"),
        ({"lr": "fast"}, "lr", "must be a number"),
        ({"init_weight": "inf"}, "init_weight", "finite"),
        ({"init_bias": ""}, "init_bias", "empty"),
        ({"momentum": 0.9}, "momentum", "unknown key"),
    ],
)
def test_bad_input_names_the_field(changes: dict, field: str, words: str) -> None:
    data = default_scenario().to_dict() | changes
    with pytest.raises(ScenarioError) as info:
        Scenario.from_mapping(data)
    assert info.value.field == field
    assert words in str(info.value)
    assert str(info.value).startswith(f"{field}: ")


def test_text_values_from_forms_and_flags() -> None:
    s = default_scenario().with_changes(world_size="4", steps="20", lr="0.05", x="1, 2 3,4")
    assert (s.world_size, s.steps, s.lr, s.x) == (4, 20, 0.05, (1, 2, 3, 4))
    assert default_scenario().with_changes(lr=None) == default_scenario()


def test_file_errors(tmp_path) -> None:
    with pytest.raises(ScenarioError, match="file not found"):
        Scenario.load(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("x = [1, 2\n")
    with pytest.raises(ScenarioError, match="not valid TOML") as info:
        Scenario.load(bad)
    assert info.value.field == "scenario"
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(ScenarioError, match="cannot read"):
        Scenario.load(folder)


def test_toml_round_trip(tmp_path) -> None:
    s = default_scenario().with_changes(world_size=4, steps=7, lr=0.03, init_bias=-1.25)
    path = tmp_path / "s.toml"
    path.write_text(s.to_toml())
    assert Scenario.load(path) == s


def test_field_errors_marks_every_bad_field_at_once() -> None:
    from ddp_viz.model.scenario import field_errors

    data = default_scenario().to_dict() | {"x": ["1", "oops", "3", "4"], "lr": "-", "steps": "0"}
    errors = field_errors(data)
    assert set(errors) == {"x[1]", "lr", "steps"}
    assert "must be a number" in errors["x[1]"]
    assert field_errors(default_scenario().to_dict()) == {}
    assert set(field_errors(default_scenario().to_dict() | {"world_size": "8"})) == {"world_size"}


@pytest.mark.parametrize(
    ("model", "ddp", "field", "words"),
    [
        ({"kind": "cnn"}, {}, "model.kind", "must be one of linear, mlp"),
        ({"kind": "mlp", "hidden": [0]}, {}, "model.hidden[0]", "from 1 to 512"),
        ({"kind": "mlp", "hidden": [8, "wide"]}, {}, "model.hidden[1]", "whole number"),
        ({"kind": "mlp", "hidden": []}, {}, "model.hidden", "list of layer widths"),
        ({"kind": "mlp", "hidden": [8] * 5}, {}, "model.hidden", "at most 4 hidden layers"),
        ({"kind": "mlp", "hidden": [512, 512, 512]}, {}, "model.hidden", "at most 300,000"),
        ({"kind": "mlp", "activation": "gelu"}, {}, "model.activation", "tanh, relu"),
        ({"kind": "mlp", "seed": -1}, {}, "model.seed", "≥ 0"),
        ({"kind": "linear", "hidden": [8]}, {}, "model.hidden", 'only for kind = "mlp"'),
        ({"dtype": "float16"}, {}, "model.dtype", "float32, float64"),
        ({"kind": "mlp", "depth": 3}, {}, "model.depth", "unknown key"),
        ({}, {"bucket_cap_mb": 0}, "ddp.bucket_cap_mb", "(0, 1024]"),
        ({}, {"bucket_cap_mb": "big"}, "ddp.bucket_cap_mb", "(0, 1024]"),
        ({}, {"find_unused": True}, "ddp.find_unused", "unknown key"),
    ],
)
def test_model_and_ddp_tables_name_the_offending_key(model, ddp, field, words) -> None:
    data = default_scenario().to_dict() | {"model": model, "ddp": ddp}
    with pytest.raises(ScenarioError) as info:
        Scenario.from_mapping(data)
    assert info.value.field == field and words in str(info.value)


def test_a_scenario_file_without_model_tables_still_means_the_linear_model(tmp_path) -> None:
    old = tmp_path / "old.toml"
    old.write_text("x = [1.0, 2.0]\ny = [3.0, 5.0]\nworld_size = 2\n")
    s = Scenario.load(old)
    assert s.model.kind == "linear" and s.ddp.bucket_cap_mb == 25.0
    assert [(p.name, p.shape) for p in s.model.parameters()] == [("weight", (1, 1)), ("bias", (1,))]


def test_an_mlp_scenario_round_trips_through_toml(tmp_path) -> None:
    s = Scenario.from_mapping(
        {"x": [1.0, 2.0], "y": [1.0, 4.0], "model": {"kind": "mlp", "hidden": [4, 3]}}
    ).with_changes(ddp={"bucket_cap_mb": 0.5})
    path = tmp_path / "mlp.toml"
    path.write_text(s.to_toml())
    back = Scenario.load(path)
    assert back == s and back.model.hidden == (4, 3) and back.ddp.bucket_cap_mb == 0.5
    names = [p.name for p in back.model.parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
