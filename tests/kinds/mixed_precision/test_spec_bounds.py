"""The ``[mixed_precision]`` table at its edges, each bound both sides, with the words a
refusal says; and the record read while the ranks are still reporting: a step is complete
only once every rank of every arm has reported it, the loss is the mean of the ranks that
have (pure, recordings only)."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.mixed_precision.model import (
    ARMS,
    KIND,
    SHARDED_ARMS,
    PrecisionRecord,
    PrecisionSpec,
    arm,
    complete_steps,
)
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

WHOLES = [
    ("steps", 1, 200),
    ("width", 2, 256),
    ("batch", 1, 256),
    ("seed", 0, 2**31 - 1),
    ("growth_interval", 1, 1000),
    ("spike_step", 0, 200),
]


def refused(table: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as err:
        PrecisionSpec.from_mapping(table)
    return err.value


@pytest.mark.parametrize(("key", "low", "high"), WHOLES, ids=[w[0] for w in WHOLES])
def test_whole_fields_take_their_bounds_and_refuse_one_past(key: str, low: int, high: int) -> None:
    # a spike needs the steps to hold it; a short run, no spike
    steps = {"steps": 200} if key == "spike_step" else {"spike_step": 0}
    for ok in (low, high):
        assert getattr(PrecisionSpec.from_mapping({**steps, key: ok}), key) == ok
    for bad in (low - 1, high + 1):
        err = refused({**steps, key: bad})
        assert err.field == f"{KIND}.{key}", (key, bad)


@pytest.mark.parametrize(
    ("key", "low", "high", "words"),
    [
        ("init_scale", 1.0, 2.0**24, "must be from 1 to 1.67772e+07"),
        ("spike", 0.0, 1e6, "must be from 0 to 1e+06"),
    ],
)
def test_numbers_take_their_bounds_and_refuse_past_them(key, low, high, words) -> None:
    for ok in (low, high):
        assert getattr(PrecisionSpec.from_mapping({key: ok}), key) == ok
    for bad in (low - 0.5, high * 1.01):
        err = refused({key: bad})
        assert (err.field, err.message) == (f"{KIND}.{key}", words)
    assert refused({key: "big"}).field == f"{KIND}.{key}"


def test_tiny_is_above_0_and_at_most_1() -> None:
    assert PrecisionSpec.from_mapping({"tiny": 1}).tiny == 1
    assert PrecisionSpec.from_mapping({"tiny": 1e-12}).tiny == 1e-12
    for bad in (0, -1e-6, 1.0001):
        err = refused({"tiny": bad})
        assert (err.field, err.message) == (f"{KIND}.tiny", "must be above 0 and at most 1")
    assert refused({"tiny": "small"}).field == f"{KIND}.tiny"


def test_the_rate_and_the_flags() -> None:
    spec = PrecisionSpec.from_mapping({"lr": 0.2, "fsdp": False, "grads": True})
    assert (spec.lr, spec.fsdp, spec.grads) == (0.2, False, True)
    assert refused({"lr": 0}).field == f"{KIND}.lr"
    assert refused({"lr": 11}).field == f"{KIND}.lr"
    assert PrecisionSpec.from_mapping({"lr": 10}).lr == 10
    assert refused({"fsdp": "yes"}).field == f"{KIND}.fsdp"
    assert refused({"grads": 2}).field == f"{KIND}.grads"


def test_the_spike_may_be_the_last_step_not_after_it() -> None:
    assert PrecisionSpec.from_mapping({"steps": 4, "spike_step": 4}).spike_step == 4
    assert PrecisionSpec.from_mapping({"steps": 4, "spike_step": 0}).spike_step == 0
    err = refused({"steps": 4, "spike_step": 5})
    assert (err.field, err.message) == (
        f"{KIND}.spike_step",
        "must be at most steps (0: no spike)",
    )


def test_the_table_writes_back_every_field() -> None:
    table = {
        "steps": 6,
        "width": 4,
        "batch": 3,
        "lr": 0.5,
        "seed": 7,
        "init_scale": 64.0,
        "growth_interval": 3,
        "spike_step": 2,
        "spike": 10.0,
        "tiny": 0.5,
        "fsdp": False,
        "grads": True,
    }
    spec = PrecisionSpec.from_mapping(table)
    assert spec.to_dict() == table
    assert PrecisionSpec.from_mapping({}) == PrecisionSpec()


def test_the_scenario_takes_the_tables_steps_and_two_ranks_or_more() -> None:
    s = Scenario.from_mapping({"world_size": 2, KIND: {"steps": 3, "spike_step": 0}})
    assert s.steps == 3
    with pytest.raises(ScenarioError) as err:
        Scenario.from_mapping({"world_size": 1, KIND: {}})
    assert (err.value.field, err.value.message) == (
        "world_size",
        "averaging needs at least 2 ranks",
    )
    with pytest.raises(ScenarioError) as err:
        Scenario.from_mapping({"world_size": 2, "steps": 5, KIND: {"steps": 3, "spike_step": 0}})
    assert (err.value.field, err.value.message) == (
        "steps",
        f"[{KIND}] steps sets the run's length; leave steps out",
    )


def test_an_arm_by_its_id_with_its_label() -> None:
    assert arm("fp16").label == "autocast fp16 + scaler" and arm("fp16").scaler
    assert arm("wire_bf16").wire == "bfloat16"
    assert arm("fsdp_bf16").label == "FSDP2 bf16 params"


def test_the_shapes_in_order_of_definition() -> None:
    assert PrecisionSpec(width=5).shapes() == [
        ("inp.weight", (5, 8)),
        ("inp.bias", (5,)),
        ("hidden.weight", (5, 5)),
        ("hidden.bias", (5,)),
        ("out.weight", (1, 5)),
        ("out.bias", (1,)),
    ]
    assert PrecisionSpec(width=3).values() == 3 * 8 + 3 + 3 * 3 + 3 + 3 + 1


@pytest.mark.parametrize("name", ["mixed-precision-3-ranks.jsonl"])
def test_a_step_is_complete_once_every_rank_of_every_arm_reported_it(name: str) -> None:
    """After every event: complete steps counted here from the raw events, with and without
    FSDP2's arms; a step one rank of one arm has not reported stops the count."""
    events = load_recording(name)
    world = next(e for e in events if e.kind == "run_started").world_size
    plain = {(e.arm, e.step, e.rank) for e in events if e.kind == "precision_step"}
    sharded = {(e.arm, e.step, e.rank) for e in events if e.kind == "precision_sharded"}
    assert sharded
    part, seen, seen_sharded = PrecisionRecord(), set(), set()

    def want(fsdp: bool) -> int:
        n = 0
        while all((a.id, n, r) in seen for a in ARMS for r in range(world)) and (
            not fsdp
            or all((a.id, n, r) in seen_sharded for a in SHARDED_ARMS for r in range(world))
        ):
            n += 1
        return n

    checked = 0
    for e in events:
        part.apply(e)
        if e.kind == "precision_step":
            seen.add((e.arm, e.step, e.rank))
        elif e.kind == "precision_sharded":
            seen_sharded.add((e.arm, e.step, e.rank))
        else:
            continue
        assert part.complete(world) == want(False)
        assert part.complete(world, fsdp=True) == want(True)
        checked += 1
    assert checked == len(plain) + len(sharded)
    assert part.complete(world, fsdp=True) == 8
    rec = record(events)
    assert complete_steps(rec) == 8


def test_the_loss_is_the_mean_of_the_ranks_that_reported() -> None:
    events = load_recording("mixed-precision-3-ranks.jsonl")
    part, losses = PrecisionRecord(), {}
    for e in events:
        part.apply(e)
        if e.kind != "precision_step":
            continue
        losses.setdefault((e.arm, e.step), []).append(e.loss)
        got = losses[(e.arm, e.step)]
        assert part.loss(e.arm, e.step) == pytest.approx(sum(got) / len(got), rel=1e-12)
    assert part.loss("fp32", 99) is None
    # the ranks' losses differ: a mean is not any one rank's
    last = losses[("fp32", 7)]
    assert len(set(last)) == 3


def test_no_skip_before_the_spike_and_the_spike_named_after() -> None:
    events = load_recording("mixed-precision-3-ranks.jsonl")
    part = PrecisionRecord()
    for e in events:
        part.apply(e)
    assert part.first_skip(4, 3) is None  # steps 0 to 3: all stepped
    assert part.first_skip(5, 3) == 4
    v = part.skipped(4, 3)
    assert (v.stepped, v.skipped, v.whole, v.together) == ([], [0, 1, 2], True, True)
    # a rank's report missing: not whole, so not "together"
    v = part.skipped(4, 4)
    assert (v.whole, v.together) == (False, False)
    refused_event = next(e for e in events if e.kind == "precision_refused")
    assert part.refused is refused_event
    fsdp = part.fsdp_at("fsdp_bf16", 2)
    assert sorted(fsdp) == [0, 1, 2] and all(
        x.arm == "fsdp_bf16" and x.step == 2 for x in fsdp.values()
    )
