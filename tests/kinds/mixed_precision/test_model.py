"""The mixed-precision spec, its record's skip verdict and its report, pure (no torch, no Qt):
the report's numbers are read against the raw events of recorded real runs (3 ranks, the odd
one last, and 4), each computed here on its own."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.kinds.mixed_precision.model import KIND, PrecisionRecord, PrecisionSpec
from ddp_viz.model.report import run_report
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

SPIKE = 4  # the lesson's spike_step 5, from 0


def steps_of(events, arm: str):
    return [e for e in events if e.kind == "precision_step" and e.arm == arm]


def test_the_table_round_trips_and_names_its_bad_fields() -> None:
    s = Scenario.from_mapping({"world_size": 3, KIND: {"steps": 6, "spike_step": 2}})
    assert s.steps == 6 and not s.trains
    assert Scenario.from_mapping(s.to_dict()) == s
    for table, field in [
        ({"steps": 0}, f"{KIND}.steps"),
        ({"steps": 4, "spike_step": 5}, f"{KIND}.spike_step"),
        ({"tiny": 0}, f"{KIND}.tiny"),
        ({"init_scale": 0.5}, f"{KIND}.init_scale"),
        ({"growth_interval": 0}, f"{KIND}.growth_interval"),
    ]:
        with pytest.raises(ScenarioError) as err:
            Scenario.from_mapping({"world_size": 2, KIND: table})
        assert err.value.field == field
    with pytest.raises(ScenarioError, match="2 ranks"):
        Scenario.from_mapping({"world_size": 1, KIND: {}})


def test_the_values_one_all_reduce_carries() -> None:
    # Linear(8, 16) + Linear(16, 16) + Linear(16, 1), weights and biases, counted by hand
    assert PrecisionSpec(width=16).values() == 8 * 16 + 16 + 16 * 16 + 16 + 16 + 1 == 433
    assert PrecisionSpec(width=4).values() == 8 * 4 + 4 + 4 * 4 + 4 + 4 + 1


@pytest.mark.parametrize("name", ["mixed-precision-3-ranks.jsonl", "mixed-precision-4-ranks.jsonl"])
def test_only_the_last_rank_overflowed_and_every_rank_skipped(name: str) -> None:
    events = load_recording(name)
    world = next(e for e in events if e.kind == "run_started").world_size
    scaler = steps_of(events, "fp16")
    spike = [e for e in scaler if e.step == SPIKE]
    assert sorted(e.rank for e in spike) == list(range(world))
    # the last rank's own gradient overflowed; the others' were finite
    assert [e.rank for e in spike if e.local_inf] == [world - 1]
    # every rank's average held the inf and every rank skipped
    assert all(e.averaged_inf and not e.stepped for e in spike)
    # every other step, every rank stepped with a finite average
    assert all(e.stepped and not e.averaged_inf for e in scaler if e.step != SPIKE)
    said = run_report(record(events)).splitlines()
    assert f"✓ step 5 skipped on every one of the {world} ranks together" in said


def test_the_scale_doubles_after_two_good_steps_and_halves_at_the_inf() -> None:
    """GradScaler(init_scale=1024, growth_interval=2), worked out by hand from which steps
    skipped: doubles after every second finite step in a row, halves on an inf (and the
    count of good steps starts again)."""
    events = load_recording("mixed-precision-3-ranks.jsonl")
    got = [
        (e.scale, e.next_scale)
        for e in sorted(steps_of(events, "fp16"), key=lambda e: e.step)
        if e.rank == 2
    ]
    scale, good, want = 1024.0, 0, []
    for step in range(len(got)):
        before = scale
        if step == SPIKE:
            scale, good = scale / 2, 0
        else:
            good += 1
            if good == 2:
                scale, good = scale * 2, 0
        want.append((before, scale))
    assert got == want
    # and every rank's scaler went the same way: no rank told another
    for rank in (0, 1):
        mine = sorted((e for e in steps_of(events, "fp16") if e.rank == rank), key=lambda e: e.step)
        assert [(e.scale, e.next_scale) for e in mine] == want, rank


def test_the_dtypes_autocast_changes_and_those_it_leaves() -> None:
    events = load_recording("mixed-precision-3-ranks.jsonl")
    want = {
        "fp32": ("float32", "float32"),
        "bf16": ("bfloat16", "float32"),
        "fp16": ("float16", "float32"),
        "wire_fp16": ("float32", "float16"),
        "wire_bf16": ("float32", "bfloat16"),
    }
    for arm, (activation, wire) in want.items():
        for e in steps_of(events, arm):
            assert e.dtypes["activation"] == activation, (arm, e.step, e.rank)
            assert e.dtypes["wire"] == wire, (arm, e.step, e.rank)
            # the parameters, their .grad and DDP's bucket stay float32 under autocast
            assert (e.dtypes["param"], e.dtypes["grad"], e.dtypes["bucket"]) == ("float32",) * 3


def test_the_wire_bytes_are_the_values_times_the_dtypes_size() -> None:
    events = load_recording("mixed-precision-3-ranks.jsonl")
    values = 8 * 16 + 16 + 16 * 16 + 16 + 16 + 1
    for arm, size in (("fp32", 4), ("wire_fp16", 2), ("wire_bf16", 2)):
        assert {e.sent for e in steps_of(events, arm)} == {values * size}, arm


def test_float16_sends_small_gradients_as_0_and_bfloat16_does_not() -> None:
    events = load_recording("mixed-precision-3-ranks.jsonl")
    fp16 = [e.underflow for e in steps_of(events, "wire_fp16")]
    assert min(fp16) > 0  # every step, every rank lost some
    assert {e.underflow for e in steps_of(events, "wire_bf16")} == {0}
    assert {e.underflow for e in steps_of(events, "fp32")} == {0}
    # fewer digits: bf16's error is the larger, both far above float32's rounding
    for step in range(8):
        (f,) = [e.error for e in steps_of(events, "wire_fp16") if (e.step, e.rank) == (step, 2)]
        (b,) = [e.error for e in steps_of(events, "wire_bf16") if (e.step, e.rank) == (step, 2)]
        (z,) = [e.error for e in steps_of(events, "fp32") if (e.step, e.rank) == (step, 2)]
        assert z < 1e-6 < f < b < 1e-1


def test_the_report_gives_every_number_from_the_events() -> None:
    events = load_recording("mixed-precision-3-ranks.jsonl")
    said = run_report(record(events)).splitlines()
    last = next(e for e in steps_of(events, "wire_fp16") if e.step == 7 and e.rank == 0)
    # the dtype table's row comes first; the wire table's is the last
    row = [line for line in said if line.startswith("fp16 on the wire ")][-1]
    assert row.split()[-3:] == ["866", f"{last.error:.2e}", str(last.underflow)]
    refused = next(e for e in events if e.kind == "precision_refused")
    assert refused.message.startswith("TypeError: BF16 all reduce communication hook required")
    assert any(line.endswith(refused.message) for line in said)


def test_a_split_step_is_named_with_both_sides() -> None:
    """A rank that stepped while the others skipped: the replicas now differ. Mid-run, the
    step before the spike is still all stepped."""
    events = load_recording("mixed-precision-3-ranks.jsonl")
    part = PrecisionRecord()
    for e in events:
        if e.kind == "precision_step" and e.arm == "fp16" and e.step == SPIKE and e.rank == 0:
            e = dataclasses.replace(e, stepped=True)
        part.apply(e)
    v = part.skipped(SPIKE, 3)
    assert (v.stepped, v.skipped, v.together) == ([0], [1, 2], False)
    assert part.skipped(SPIKE - 1, 3).together and not part.skipped(SPIKE - 1, 3).skipped
    assert part.first_skip(8, 3) == SPIKE


def padded(rows: int, world: int) -> int:
    """FSDP2 shards a parameter by rows, padded to a multiple of the world size."""
    return -(-rows // world) * world


@pytest.mark.parametrize("name", ["mixed-precision-3-ranks.jsonl", "mixed-precision-4-ranks.jsonl"])
def test_fsdp2_gathers_bf16_shards_and_reduces_in_float32(name: str) -> None:
    """Worked out by hand for Linear(8, 16), Linear(16, 16), Linear(16, 1): each layer's
    padded weight and bias; a rank's shard all-gathered in forward and again in backward (in
    the parameters' dtype), the whole padded gradient reduce-scattered in the reduce dtype."""
    events = load_recording(name)
    world = next(e for e in events if e.kind == "run_started").world_size
    layers = [(16, 8), (16, 16), (1, 16)]
    values = sum(padded(n, world) * m + padded(n, world) for n, m in layers)
    sharded = [e for e in events if e.kind == "precision_sharded"]
    assert len(sharded) == 2 * 8 * world  # two arms, eight steps, every rank
    for e in sharded:
        size = 2 if e.arm == "fsdp_bf16" else 4
        assert e.gathered == 2 * values // world * size, (e.arm, e.step, e.rank)
        assert e.reduced == values * 4, (e.arm, e.step, e.rank)
        gather = "bfloat16" if e.arm == "fsdp_bf16" else "float32"
        assert (e.dtypes["gather"], e.dtypes["reduce"], e.dtypes["activation"]) == (
            gather,
            "float32",
            gather,
        )
        assert (e.dtypes["param"], e.dtypes["grad"]) == ("float32", "float32")
    said = run_report(record(events)).splitlines()
    row = next(line for line in said if line.startswith("FSDP2 bf16 params "))
    assert row.split()[-4:] == [
        f"{2 * values // world * 2:,}",
        f"{values * 4:,}",
        "bfloat16",
        "float32",
    ]
