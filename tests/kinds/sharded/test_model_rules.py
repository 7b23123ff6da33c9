"""The sharded kind's rules, one by one and at their edges (pure): the table's ranges, who
ZeRO-1 hands each parameter to when sizes tie, FSDP2's rows at a world that does not divide,
the bytes a rank that owns nothing holds, the papers' ideal bytes, what FSDP2 gathers per layer
against the recorded gathers, and the record kept as the events come (a rank missing, the
calls out of order). Expected values are worked out by hand or read from the raw events."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ddp_viz.kinds.sharded.events import ShardedCollective, ShardedStep
from ddp_viz.kinds.sharded.model import (
    KIND,
    ShardedRecord,
    ShardedSpec,
    Way,
    chunk_rows,
    complete_steps,
    expected_bytes,
    ideal_bytes,
    layer_bytes,
    layer_of,
    owned_rows,
    ring_sent,
    spec_of,
    zero_owners,
)
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording


@pytest.mark.parametrize(
    ("key", "low", "high"),
    [("steps", 1, 200), ("width", 8, 512), ("batch", 1, 256), ("seed", 0, 2**31 - 1)],
)
def test_each_whole_number_is_taken_at_its_ends_and_refused_past_them(key, low, high) -> None:
    assert getattr(ShardedSpec.from_mapping({key: low}), key) == low
    assert getattr(ShardedSpec.from_mapping({key: high}), key) == high
    for bad in (low - 1, high + 1):
        with pytest.raises(ScenarioError) as err:
            ShardedSpec.from_mapping({key: bad})
        assert err.value.field == f"{KIND}.{key}"


def test_the_learning_rate_is_above_0_and_at_most_1() -> None:
    assert ShardedSpec.from_mapping({"lr": 1}).lr == 1.0
    assert ShardedSpec.from_mapping({"lr": 0.25}).lr == 0.25
    for bad in (0, 1.01):
        with pytest.raises(ScenarioError) as err:
            ShardedSpec.from_mapping({"lr": bad})
        assert err.value.field == f"{KIND}.lr"


def test_the_defaults_and_a_table_of_every_key_round_trip() -> None:
    assert ShardedSpec.from_mapping({}) == ShardedSpec(steps=4, width=64, batch=8, lr=0.01, seed=0)
    table = {"steps": 7, "width": 24, "batch": 3, "lr": 0.5, "seed": 11}
    spec = ShardedSpec.from_mapping(table)
    assert spec.to_dict() == table
    assert list(spec.to_dict()) == ["steps", "width", "batch", "lr", "seed"]
    assert spec.fixed_steps(2) == spec.fixed_steps(8) == 7


def test_the_scenario_needs_two_ranks_and_the_tables_steps() -> None:
    spec = ShardedSpec(steps=5)
    spec.check_scenario(SimpleNamespace(world_size=2, steps=5))  # type: ignore[arg-type]
    with pytest.raises(ScenarioError) as err:
        spec.check_scenario(SimpleNamespace(world_size=1, steps=5))  # type: ignore[arg-type]
    assert (err.value.field, err.value.message) == ("world_size", "sharding needs at least 2 ranks")
    for steps in (4, 6):
        with pytest.raises(ScenarioError) as err:
            spec.check_scenario(SimpleNamespace(world_size=3, steps=steps))  # type: ignore[arg-type]
        assert err.value.field == "steps"
        assert err.value.message == "[sharded] steps sets the run's length; leave steps out"


def test_the_shapes_are_the_mlps_in_order_of_definition() -> None:
    spec = ShardedSpec(width=24)
    assert spec.shapes() == [
        ("inp.weight", (24, 16)),
        ("inp.bias", (24,)),
        ("hidden.weight", (24, 24)),
        ("hidden.bias", (24,)),
        ("out.weight", (8, 24)),
        ("out.bias", (8,)),
    ]
    assert spec.numels() == {
        "inp.weight": 384,
        "inp.bias": 24,
        "hidden.weight": 576,
        "hidden.bias": 24,
        "out.weight": 192,
        "out.bias": 8,
    }
    assert [layer_of(n) for n, _ in spec.shapes()] == ["inp"] * 2 + ["hidden"] * 2 + ["out"] * 2
    assert [w.label for w in Way] == ["DDP", "DDP + ZeRO-1", "FSDP2"]


@pytest.mark.parametrize(
    ("d0", "world", "rank", "want"),
    [
        (64, 3, 0, (0, 22)),
        (64, 3, 1, (22, 22)),
        (64, 3, 2, (44, 20)),  # ceil(64 / 3) = 22: the last rank holds what is left
        (5, 2, 1, (3, 2)),
        (2, 4, 1, (1, 1)),
        (2, 4, 2, (2, 0)),  # a rank past the end: none
        (2, 4, 3, (2, 0)),  # its first row is held at the end, not past it
    ],
)
def test_fsdp_rows_at_a_world_that_does_not_divide(d0, world, rank, want) -> None:
    assert chunk_rows(d0, world, rank) == want


def test_zero_gives_ties_to_the_first_rank_and_equal_sizes_in_definition_order() -> None:
    spec = ShardedSpec()  # 4096, 1024, 512, 64 (inp.bias), 64 (hidden.bias), 8
    # 3 ranks: hidden.weight → 0, inp.weight → 1, out.weight → 2 (512), inp.bias → 2 (576),
    # hidden.bias → 2 (640, still the fewest), out.bias → 2 (640 < 1024)
    assert zero_owners(spec, 3) == {
        "hidden.weight": 0,
        "inp.weight": 1,
        "out.weight": 2,
        "inp.bias": 2,
        "hidden.bias": 2,
        "out.bias": 2,
    }
    # width 8: 128 (inp.weight), 64 (hidden.weight), 64 (out.weight), then the biases, 8
    # each, in definition order: at 2 ranks inp.weight → 0, hidden.weight → 1, out.weight → 1
    # (64 < 128), inp.bias → 0 (a tie at 128: the first rank), hidden.bias → 1, out.bias → 0
    small = ShardedSpec(width=8)
    assert zero_owners(small, 2) == {
        "inp.weight": 0,
        "hidden.weight": 1,
        "out.weight": 1,
        "inp.bias": 0,
        "hidden.bias": 1,
        "out.bias": 0,
    }


def test_each_way_owns_its_rows() -> None:
    spec = ShardedSpec()
    assert owned_rows(spec, Way.DDP, 3, 1) == {
        "inp.weight": (0, 64),
        "inp.bias": (0, 64),
        "hidden.weight": (0, 64),
        "hidden.bias": (0, 64),
        "out.weight": (0, 8),
        "out.bias": (0, 8),
    }
    assert owned_rows(spec, Way.ZERO, 3, 1) == {
        "inp.weight": (0, 64),
        "inp.bias": (0, 0),
        "hidden.weight": (0, 0),
        "hidden.bias": (0, 0),
        "out.weight": (0, 0),
        "out.bias": (0, 0),
    }
    assert owned_rows(spec, Way.FSDP, 3, 2) == {
        "inp.weight": (44, 20),
        "inp.bias": (44, 20),
        "hidden.weight": (44, 20),
        "hidden.bias": (44, 20),
        "out.weight": (6, 2),  # ceil(8 / 3) = 3: rows 6 and 7
        "out.bias": (6, 2),
    }


def test_the_bytes_of_a_rank_that_owns_little_or_nothing() -> None:
    spec = ShardedSpec()
    # ZeRO at 3 ranks, rank 2: out.weight 512 + the biases 64 + 64 + 8 = 648 values, 4 steps
    assert expected_bytes(spec, Way.ZERO, 3, 2) == {
        "params": 23072,
        "grads": 23072,
        "state": 2 * 648 * 4 + 4 * 4,
    }
    # at 8 ranks rank 7 owns nothing: no state at all, not even a step scalar
    assert expected_bytes(spec, Way.ZERO, 8, 7) == {"params": 23072, "grads": 23072, "state": 0}
    # FSDP at 3 ranks, rank 2: 20 rows of the 64-row tensors, 2 of the 8-row ones:
    # 20·16 + 20 + 20·64 + 20 + 2·64 + 2 = 1770 values; a step scalar for every parameter
    assert expected_bytes(spec, Way.FSDP, 3, 2) == {
        "params": 7080,
        "grads": 7080,
        "state": 2 * 7080 + 6 * 4,
    }
    assert expected_bytes(spec, Way.DDP, 3, 2) == {
        "params": 23072,
        "grads": 23072,
        "state": 2 * 23072 + 6 * 4,
    }


def test_the_papers_ideal_bytes_divide_by_the_ranks() -> None:
    spec = ShardedSpec()
    full = 4 * 5768
    assert ideal_bytes(spec, Way.DDP, 4) == {"params": full, "grads": full, "state": 2 * full}
    assert ideal_bytes(spec, Way.ZERO, 4) == {"params": full, "grads": full, "state": full / 2}
    assert ideal_bytes(spec, Way.FSDP, 4) == {
        "params": full / 4,
        "grads": full / 4,
        "state": full / 2,
    }
    assert ideal_bytes(spec, Way.FSDP, 3)["grads"] == full / 3


@pytest.mark.parametrize("name", ["sharded-2-ranks.jsonl", "sharded-4-ranks.jsonl"])
def test_what_fsdp_gathers_per_layer_is_the_layers_bytes(name) -> None:
    lines = [json.loads(x) for x in (DATA / name).read_text().splitlines() if x]
    gathered = {
        d["layer"]: d["bytes_out"]
        for d in lines
        if d["event"] == "sharded_collective" and d["op"] == "all_gather"
    }
    assert layer_bytes(ShardedSpec()) == gathered == {"inp": 4352, "hidden": 16640, "out": 2080}


@pytest.mark.parametrize(
    ("op", "want"),
    [("all_reduce", 2 * 3000 * 2 / 3), ("all_gather", 3000 * 2 / 3), ("reduce_scatter", 2000)],
)
def test_a_ring_sends_n_minus_1_over_n_per_pass(op, want) -> None:
    assert ring_sent(op, 3000, 3) == pytest.approx(want)


def _step(rank: int, step: int = 0, way: str = "zero", state: int = 10) -> ShardedStep:
    return ShardedStep(
        run=1,
        rank=rank,
        way=way,  # type: ignore[arg-type]
        step=step,
        loss=1.0,
        params=100 + rank,
        grads=200 + rank,
        state=state,
        gathered=0,
        gathered_at="",
        owned={},
        param_diff=0.0,
        grad_diff=0.0,
    )


def _call(rank: int, seq: int, step: int = 0) -> ShardedCollective:
    return ShardedCollective(
        run=1,
        rank=rank,
        way="fsdp",
        step=step,
        seq=seq,
        op="all_gather",
        phase="forward",
        layer="inp",
        tensors=[],
        bytes_in=1,
        bytes_out=4,
        start=0.0,
        end=1.0,
    )


def test_the_record_counts_a_step_only_once_every_rank_reported_every_way() -> None:
    rec = ShardedRecord()
    assert rec.complete(3) == 0
    for way in ("ddp", "zero", "fsdp"):
        for rank in (0, 1):
            rec.apply(_step(rank, 0, way))
    assert rec.complete(3) == 0  # rank 2 is still missing
    for way in ("ddp", "zero"):
        rec.apply(_step(2, 0, way))
    assert rec.complete(3) == 0  # and its FSDP2 step
    rec.apply(_step(2, 0, "fsdp"))
    assert rec.complete(3) == 1
    for way in ("ddp", "zero", "fsdp"):
        for rank in (0, 1, 2):
            rec.apply(_step(rank, 2, way))  # step 2 without step 1: not counted
    assert rec.complete(3) == 1


def test_the_record_answers_what_a_rank_held_and_called() -> None:
    rec = ShardedRecord()
    rec.apply(_step(0, state=7))
    rec.apply(_step(2, state=9))
    rec.apply(SimpleNamespace(kind="hook_step"))  # type: ignore[arg-type]  # another kind's
    assert sorted(rec.at("zero", 0)) == [0, 2]
    assert rec.at("zero", 1) == {} and rec.at("ddp", 0) == {}
    assert rec.held("zero", 0, 2, "state") == 9
    assert rec.held("zero", 0, 2, "grads") == 202
    assert rec.held("zero", 0, 0, "params") == 100
    assert rec.held("zero", 0, 1, "state") is None
    assert rec.held("zero", 1, 0, "state") is None
    for seq in (2, 0, 1):
        rec.apply(_call(1, seq))
    rec.apply(_call(0, 5))
    assert [c.seq for c in rec.calls("fsdp", 0, 1)] == [0, 1, 2]  # in issue order
    assert [c.seq for c in rec.calls("fsdp", 0)] == [5]  # rank 0 unless told
    assert rec.calls("fsdp", 0, 2) == [] and rec.calls("fsdp", 1, 1) == [] == rec.calls("ddp", 0)


def test_a_recordings_spec_and_complete_steps() -> None:
    rec = record(load_recording("sharded-4-ranks.jsonl"))
    assert spec_of(rec) == ShardedSpec(steps=4, width=64, batch=8, lr=0.01, seed=0)
    assert complete_steps(rec) == 4
    cut = [e for e in load_recording("sharded-4-ranks.jsonl")]
    cut = [
        e
        for e in cut
        if not (e.kind == "sharded_step" and (e.way, e.step, e.rank) == ("fsdp", 2, 3))
    ]
    assert complete_steps(record(cut)) == 2
