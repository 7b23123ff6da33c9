"""The comm-hooks table at its edges, every variant's label and id, and the record kept as the
events come: the loss of a step is the mean of the ranks' (odd rank last), the bytes a rank's,
and a step counts only when every rank reported every variant (pure; expected values by hand
or from the raw events)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ddp_viz.kinds.hook_compression.model import (
    KIND,
    HooksRecord,
    HooksSpec,
    Variant,
    complete_steps,
    compressed,
    spec_of,
)
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording


@pytest.mark.parametrize(
    ("key", "low", "high"),
    [
        ("steps", 1, 2000),
        ("width", 2, 512),
        ("batch", 1, 512),
        ("warmup", 2, 2000),
        ("seed", 0, 2**31 - 1),
    ],
)
def test_each_whole_number_is_taken_at_its_ends_and_refused_past_them(key, low, high) -> None:
    assert getattr(HooksSpec.from_mapping({key: low}), key) == low
    assert getattr(HooksSpec.from_mapping({key: high}), key) == high
    for bad in (low - 1, high + 1):
        with pytest.raises(ScenarioError) as err:
            HooksSpec.from_mapping({key: bad})
        assert err.value.field == f"{KIND}.{key}"


def test_the_learning_rate_and_the_bucket_cap_at_their_ends() -> None:
    assert HooksSpec.from_mapping({"lr": 10}).lr == 10.0
    assert HooksSpec.from_mapping({"bucket_cap_mb": 100}).bucket_cap_mb == 100.0
    assert HooksSpec.from_mapping({"bucket_cap_mb": 0.25}).bucket_cap_mb == 0.25
    for key, bad in (("lr", 10.5), ("lr", 0), ("bucket_cap_mb", 0), ("bucket_cap_mb", 100.5)):
        with pytest.raises(ScenarioError) as err:
            HooksSpec.from_mapping({key: bad})
        assert err.value.field == f"{KIND}.{key}"
    with pytest.raises(ScenarioError) as err:
        HooksSpec.from_mapping({"bucket_cap_mb": -1})
    assert err.value.message == "must be above 0 and at most 100"


def test_the_ranks_are_up_to_four_distinct_whole_numbers_from_1_to_64() -> None:
    assert HooksSpec.from_mapping({"ranks": [64, 1, 2, 3]}).ranks == (64, 1, 2, 3)
    assert HooksSpec.from_mapping({"ranks": (8,)}).ranks == (8,)
    assert HooksSpec.from_mapping({"ranks": []}).ranks == ()
    for bad in ([1, 2, 3, 4, 5], 4, "1, 4"):
        with pytest.raises(ScenarioError) as err:
            HooksSpec.from_mapping({"ranks": bad})
        assert err.value.field == f"{KIND}.ranks"
        assert err.value.message == "must be a list of up to 4 ranks, like [1, 4]"
    for bad, where in (([1, 0], "[1]"), ([65], "[0]")):
        with pytest.raises(ScenarioError) as err:
            HooksSpec.from_mapping({"ranks": bad})
        assert err.value.field == f"{KIND}.ranks{where}"
    with pytest.raises(ScenarioError) as err:
        HooksSpec.from_mapping({"ranks": [2, 4, 2]})
    assert (err.value.field, err.value.message) == (f"{KIND}.ranks", "names a rank twice")


def test_the_choices_and_flags_are_read() -> None:
    spec = HooksSpec.from_mapping({"error_feedback": "off", "fp16": "false", "grads": True})
    assert (spec.error_feedback, spec.fp16, spec.grads) == ("off", False, True)
    assert HooksSpec.from_mapping({"fp16": False, "grads": "false"}).grads is False
    for key, bad in (("error_feedback", "yes"), ("fp16", 1), ("grads", "no")):
        with pytest.raises(ScenarioError) as err:
            HooksSpec.from_mapping({key: bad})
        assert err.value.field == f"{KIND}.{key}"


def test_the_defaults_and_a_table_of_every_key_round_trip() -> None:
    assert HooksSpec.from_mapping({}) == HooksSpec()
    assert (HooksSpec().steps, HooksSpec().width, HooksSpec().warmup) == (300, 256, 10)
    table = {
        "steps": 9,
        "width": 12,
        "batch": 5,
        "lr": 0.5,
        "warmup": 3,
        "ranks": [2, 1],
        "error_feedback": "on",
        "fp16": False,
        "bucket_cap_mb": 2.5,
        "seed": 4,
        "grads": True,
    }
    spec = HooksSpec.from_mapping(table)
    assert spec.ranks == (2, 1)
    assert spec.to_dict() == table  # the ranks as a list again
    assert spec.fixed_steps(2) == spec.fixed_steps(5) == 9


def test_the_scenario_needs_two_ranks_and_the_tables_steps() -> None:
    spec = HooksSpec(steps=6)
    spec.check_scenario(SimpleNamespace(world_size=2, steps=6))  # type: ignore[arg-type]
    with pytest.raises(ScenarioError) as err:
        spec.check_scenario(SimpleNamespace(world_size=1, steps=6))  # type: ignore[arg-type]
    assert (err.value.field, err.value.message) == (
        "world_size",
        "averaging needs at least 2 ranks",
    )
    for steps in (5, 7):
        with pytest.raises(ScenarioError) as err:
            spec.check_scenario(SimpleNamespace(world_size=2, steps=steps))  # type: ignore[arg-type]
        assert err.value.field == "steps"
        assert (
            err.value.message == "[hook_compression] steps sets the run's length; leave steps out"
        )


def test_every_variant_its_id_and_its_label() -> None:
    on = HooksSpec(ranks=(3, 1), error_feedback="on").variants()
    assert [(v.id, v.hook, v.rank_r, v.feedback) for v in on] == [
        ("allreduce", "allreduce", 0, False),
        ("fp16", "fp16", 0, False),
        ("powersgd-r3", "powersgd", 3, True),
        ("powersgd-r1", "powersgd", 1, True),
    ]
    assert [v.label for v in on] == [
        "default all-reduce",
        "fp16 compress",
        "PowerSGD r=3 + EF",
        "PowerSGD r=1 + EF",
    ]
    both = HooksSpec(ranks=(2,), fp16=False).variants()
    assert [v.label for v in both] == [
        "default all-reduce",
        "PowerSGD r=2 + EF",
        "PowerSGD r=2, no EF",
    ]
    assert Variant("x", "powersgd", 5).label == "PowerSGD r=5, no EF"


def test_the_shapes_are_the_mlps_in_order_of_definition() -> None:
    assert HooksSpec(width=6).shapes() == [
        ("inp.weight", (6, 16)),
        ("inp.bias", (6,)),
        ("hidden.weight", (6, 6)),
        ("hidden.bias", (6,)),
        ("out.weight", (1, 6)),
        ("out.bias", (1,)),
    ]


@pytest.mark.parametrize(
    ("shape", "r", "want"),
    [
        ((9, 9), 2, (9, 9, 2)),  # 2 · 2 · 18 = 72 < 81
        ((9, 9), 3, None),  # 2 · 3 · 18 = 108 ≥ 81
        ((16, 2, 2), 1, (16, 4, 1)),  # m is every later dim multiplied: 2 · 20 = 40 < 64
        ((6, 10), 64, None),  # r is at most 6: 2 · 6 · 16 ≥ 60
        ((100, 3), 64, None),  # r is at most m = 3: 2 · 3 · 103 = 618 ≥ 300
        ((100, 5), 1, (100, 5, 1)),  # 2 · 105 = 210 < 500
    ],
)
def test_powersgd_compresses_only_what_is_worth_it(shape, r, want) -> None:
    assert compressed(shape, r) == want


def _step(rank: int, variant: str, step: int, loss: float, sent: list[int]):
    return SimpleNamespace(
        kind="hook_step", rank=rank, variant=variant, step=step, loss=loss, sent=sent
    )


def test_the_record_keeps_each_rank_and_means_the_loss_over_them() -> None:
    rec = HooksRecord()
    assert rec.loss("fp16", 0) is None and rec.sent("fp16", 0) is None
    rec.apply(_step(0, "fp16", 0, 1.0, [10, 5]))
    rec.apply(_step(1, "fp16", 0, 2.0, [30, 1]))
    rec.apply(_step(2, "fp16", 0, 6.0, [7]))
    rec.apply(SimpleNamespace(kind="sharded_step"))  # another kind's: left alone
    assert rec.loss("fp16", 0) == 3.0
    assert rec.sent("fp16", 0) == 15  # rank 0 unless told
    assert rec.sent("fp16", 0, 2) == 7 and rec.sent("fp16", 0, 1) == 31
    assert rec.sent("fp16", 0, 3) is None and rec.sent("fp16", 1) is None
    assert sorted(rec.at("fp16", 0)) == [0, 1, 2] and rec.at("fp16", 1) == {}
    low = SimpleNamespace(kind="hook_low_rank", variant="powersgd-r1", step=4)
    rec.apply(low)
    assert rec.low_rank == {("powersgd-r1", 4): low}


def test_a_step_counts_once_every_rank_reported_every_variant() -> None:
    rec = HooksRecord()
    variants = ["allreduce", "fp16"]
    assert rec.complete(variants, 2) == 0
    rec.apply(_step(0, "allreduce", 0, 1.0, [1]))
    rec.apply(_step(1, "allreduce", 0, 1.0, [1]))
    rec.apply(_step(0, "fp16", 0, 1.0, [1]))
    assert rec.complete(variants, 2) == 0
    rec.apply(_step(1, "fp16", 0, 1.0, [1]))
    assert rec.complete(variants, 2) == 1 and rec.complete(variants, 3) == 0
    for v in variants:
        for r in (0, 1):
            rec.apply(_step(r, v, 2, 1.0, [1]))  # step 2 without step 1
    assert rec.complete(variants, 2) == 1


def test_a_recordings_spec_and_its_complete_steps() -> None:
    name = "comm-hooks-14-steps.jsonl"
    lines = [json.loads(x) for x in (DATA / name).read_text().splitlines() if x]
    table = next(d for d in lines if d["event"] == "run_started")["scenario"][KIND]
    rec = record(load_recording(name))
    assert spec_of(rec).to_dict() == table
    assert complete_steps(rec) == table["steps"] == 14
    cut = [
        e
        for e in load_recording(name)
        if not (e.kind == "hook_step" and (e.variant, e.step, e.rank) == ("powersgd-r4-noef", 5, 1))
    ]
    assert complete_steps(record(cut)) == 5
