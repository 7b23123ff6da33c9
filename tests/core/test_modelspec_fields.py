"""[model] and [ddp]: each bad value refused with a message naming its field, each bound taken
and refused on both sides, the parameter and buffer names and shapes written out by hand for
small networks, and how a model is described and written back."""

from __future__ import annotations

import pytest

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import DDPSpec, ModelSpec, ParamInfo, spec_table


def refused(cls, data) -> tuple[str, str]:
    with pytest.raises(ScenarioError) as caught:
        cls.from_mapping(data)
    return caught.value.field, caught.value.message


def test_a_table_must_be_a_table_of_known_keys_and_the_first_unknown_is_named() -> None:
    assert refused(ModelSpec, [1]) == ("model", "must be a table ([model])")
    assert refused(DDPSpec, "x") == ("ddp", "must be a table ([ddp])")
    assert refused(ModelSpec, {"zeta": 1, "beta": 2}) == (
        "model.beta",
        "unknown key; allowed: kind, hidden, activation, seed, dtype, norm, unused",
    )
    table = {"a": 1}
    assert spec_table(table, "t", ("a", "b")) is table


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"kind": "cnn"}, "model.kind", "must be one of linear, mlp, got 'cnn'"),
        ({"dtype": "float16"}, "model.dtype", "must be one of float32, float64, got 'float16'"),
        (
            {"kind": "mlp", "dtype": "half"},
            "model.dtype",
            "must be one of float32, float64, got 'half'",
        ),
        ({"hidden": [8]}, "model.hidden", 'only for kind = "mlp"'),
        ({"seed": 1}, "model.seed", 'only for kind = "mlp"'),
        ({"activation": "relu", "norm": "batch"}, "model.activation", 'only for kind = "mlp"'),
        ({"norm": "batch"}, "model.norm", 'only for kind = "mlp"'),
        ({"unused": True}, "model.unused", 'only for kind = "mlp"'),
        (
            {"kind": "mlp", "hidden": []},
            "model.hidden",
            "must be a list of layer widths, such as [8]",
        ),
        (
            {"kind": "mlp", "hidden": "8"},
            "model.hidden",
            "must be a list of layer widths, such as [8]",
        ),
        (
            {"kind": "mlp", "hidden": True},
            "model.hidden",
            "must be a list of layer widths, such as [8]",
        ),
        ({"kind": "mlp", "hidden": [1] * 5}, "model.hidden", "at most 4 hidden layers"),
        (
            {"kind": "mlp", "hidden": [8, 0]},
            "model.hidden[1]",
            "must be a whole number from 1 to 512, got 0",
        ),
        (
            {"kind": "mlp", "hidden": [513]},
            "model.hidden[0]",
            "must be a whole number from 1 to 512, got 513",
        ),
        (
            {"kind": "mlp", "hidden": [8.0]},
            "model.hidden[0]",
            "must be a whole number from 1 to 512, got 8.0",
        ),
        (
            {"kind": "mlp", "hidden": [True]},
            "model.hidden[0]",
            "must be a whole number from 1 to 512, got True",
        ),
        (
            {"kind": "mlp", "activation": "gelu"},
            "model.activation",
            "must be one of tanh, relu, got 'gelu'",
        ),
        ({"kind": "mlp", "seed": -1}, "model.seed", "must be a whole number ≥ 0, got -1"),
        ({"kind": "mlp", "seed": 1.0}, "model.seed", "must be a whole number ≥ 0, got 1.0"),
        ({"kind": "mlp", "seed": True}, "model.seed", "must be a whole number ≥ 0, got True"),
        ({"kind": "mlp", "norm": "layer"}, "model.norm", "must be one of none, batch, got 'layer'"),
        ({"kind": "mlp", "unused": "no"}, "model.unused", "must be true or false, got 'no'"),
        # 512 * 512 * 2 weights, and more: past 300,000 values
        (
            {"kind": "mlp", "hidden": [512, 512, 512]},
            "model.hidden",
            "526,849 parameters; at most 300,000 for now",
        ),
    ],
)
def test_each_bad_model_value_is_refused_naming_its_field(data, field, message) -> None:
    got = refused(ModelSpec, data)
    assert got[0] == field and got[1].endswith(message), got


def test_a_models_bounds_are_taken() -> None:
    spec = ModelSpec.from_mapping(
        {"kind": "mlp", "hidden": [1, 512, 1, 2], "seed": 0, "activation": "relu"}
    )
    assert spec.hidden == (1, 512, 1, 2) and spec.seed == 0 and spec.activation == "relu"
    assert ModelSpec.from_mapping({"kind": "mlp", "hidden": 5}).hidden == (5,)
    assert ModelSpec.from_mapping({"kind": "mlp", "hidden": (3, 4)}).hidden == (3, 4)
    assert ModelSpec.from_mapping({"kind": "mlp"}) == ModelSpec(kind="mlp")
    # 1 -> 420 -> 420 -> 1: 420 + 420 + 176,400 + 420 + 420 + 1 = 178,081 values: allowed
    assert ModelSpec.from_mapping({"kind": "mlp", "hidden": [420, 420]}).hidden == (420, 420)
    assert ModelSpec.from_mapping({}) == ModelSpec()
    assert ModelSpec.from_mapping({"dtype": "float64"}) == ModelSpec(dtype="float64")


def test_the_parameter_cap_is_checked_on_both_sides_of_it() -> None:
    # hidden [512, 512, h]: 1,024 + 262,656 + 513h + h + 1 values = 263,681 + 514h
    ok = ModelSpec.from_mapping({"kind": "mlp", "hidden": [512, 512, 70]})
    assert sum(p.numel for p in ok.parameters()) == 263_681 + 514 * 70 == 299_661
    assert refused(ModelSpec, {"kind": "mlp", "hidden": [512, 512, 71]}) == (
        "model.hidden",
        "300,175 parameters; at most 300,000 for now",
    )


def params(spec: ModelSpec) -> list[tuple[str, tuple[int, ...]]]:
    return [(p.name, p.shape) for p in spec.parameters()]


def test_a_linear_models_parameters_and_words() -> None:
    spec = ModelSpec.from_mapping({"kind": "linear"})
    assert params(spec) == [("weight", (1, 1)), ("bias", (1,))]
    assert spec.buffers() == [] and spec.describe() == "nn.Linear(1, 1)"
    assert spec.to_dict() == {"kind": "linear"}
    f64 = ModelSpec(dtype="float64")
    assert f64.describe() == "nn.Linear(1, 1), float64"
    assert f64.to_dict() == {"kind": "linear", "dtype": "float64"}


def test_an_mlps_parameters_follow_its_sequential_layers() -> None:
    spec = ModelSpec(kind="mlp", hidden=(3, 2))
    assert params(spec) == [
        ("0.weight", (3, 1)),
        ("0.bias", (3,)),
        ("2.weight", (2, 3)),
        ("2.bias", (2,)),
        ("4.weight", (1, 2)),
        ("4.bias", (1,)),
    ]
    assert spec.per_layer == 2 and spec.buffers() == []
    assert [p.numel for p in spec.parameters()] == [3, 3, 6, 2, 2, 1]


def test_batch_norm_adds_its_weights_and_buffers_after_each_hidden_linear() -> None:
    spec = ModelSpec(kind="mlp", hidden=(3, 2), norm="batch", unused=True)
    assert spec.per_layer == 3
    assert params(spec) == [
        ("0.weight", (3, 1)),
        ("0.bias", (3,)),
        ("1.weight", (3,)),
        ("1.bias", (3,)),
        ("3.weight", (2, 3)),
        ("3.bias", (2,)),
        ("4.weight", (2,)),
        ("4.bias", (2,)),
        ("6.weight", (1, 2)),
        ("6.bias", (1,)),
        ("aux.weight", (1, 1)),
        ("aux.bias", (1,)),
    ]
    assert [(b.name, b.shape) for b in spec.buffers()] == [
        ("1.running_mean", (3,)),
        ("1.running_var", (3,)),
        ("4.running_mean", (2,)),
        ("4.running_var", (2,)),
    ]
    assert ModelSpec(kind="linear", norm="batch").buffers() == []


def test_an_mlp_is_described_and_written_back_whole() -> None:
    spec = ModelSpec(kind="mlp", hidden=(4, 2), activation="relu", seed=3)
    assert spec.describe() == "MLP 1 → 4 → 2 → 1 (relu), seed 3"
    odd = ModelSpec(kind="mlp", hidden=(4,), norm="batch", unused=True, dtype="float64")
    assert odd.describe() == "MLP 1 → 4 → 1 (tanh, BatchNorm1d, unused aux), seed 0, float64"
    assert odd.to_dict() == {
        "kind": "mlp",
        "hidden": [4],
        "activation": "tanh",
        "seed": 0,
        "norm": "batch",
        "unused": True,
        "dtype": "float64",
    }
    assert ModelSpec.from_mapping(odd.to_dict()) == odd
    assert ModelSpec.from_mapping(spec.to_dict()) == spec
    assert "dtype" not in spec.to_dict()
    assert ParamInfo("x", ()).numel == 1 and ParamInfo("x", (2, 3, 4)).numel == 24


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"bucket_cap_mb": 0}, "ddp.bucket_cap_mb", "must be a number in (0, 1024], got 0"),
        (
            {"bucket_cap_mb": 1024.5},
            "ddp.bucket_cap_mb",
            "must be a number in (0, 1024], got 1024.5",
        ),
        ({"bucket_cap_mb": -1}, "ddp.bucket_cap_mb", "must be a number in (0, 1024], got -1"),
        ({"bucket_cap_mb": True}, "ddp.bucket_cap_mb", "must be a number in (0, 1024], got True"),
        ({"bucket_cap_mb": "25"}, "ddp.bucket_cap_mb", "must be a number in (0, 1024], got '25'"),
        ({"forward_sync_buffers": 1}, "ddp.forward_sync_buffers", "must be true or false, got 1"),
        (
            {"find_unused_parameters": "x"},
            "ddp.find_unused_parameters",
            "must be true or false, got 'x'",
        ),
        (
            {"broadcast_buffers": True},
            "ddp.broadcast_buffers",
            "unknown key; allowed: bucket_cap_mb, forward_sync_buffers, find_unused_parameters",
        ),
    ],
)
def test_each_bad_ddp_value_is_refused_naming_its_field(data, field, message) -> None:
    got = refused(DDPSpec, data)
    assert got[0] == field and got[1].endswith(message), got


def test_ddps_defaults_bounds_and_flags() -> None:
    assert DDPSpec.from_mapping({}) == DDPSpec(25.0, True, False)
    assert DDPSpec.from_mapping({"bucket_cap_mb": 1024}).bucket_cap_mb == 1024.0
    assert DDPSpec.from_mapping({"bucket_cap_mb": 0.0001}).bucket_cap_mb == 0.0001
    got = DDPSpec.from_mapping(
        {"bucket_cap_mb": 2, "forward_sync_buffers": False, "find_unused_parameters": True}
    )
    assert type(got.bucket_cap_mb) is float
    assert got.to_dict() == {
        "bucket_cap_mb": 2.0,
        "forward_sync_buffers": False,
        "find_unused_parameters": True,
    }
