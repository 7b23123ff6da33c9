"""The sharded kind's formulas, spec and record, pure (no torch, no Qt), and the recorded runs
against the formulas."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.sharded.model import (
    GRAD_TOL,
    KIND,
    PARAM_TOL,
    WAYS,
    WHAT,
    ShardedSpec,
    Way,
    chunk_rows,
    expected_bytes,
    ideal_bytes,
    ring_sent,
    zero_owners,
)
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.timeline import record
from tests.conftest import load_recording


def test_zero_hands_out_whole_parameters_largest_first() -> None:
    spec = ShardedSpec()  # hidden.weight 4096, inp.weight 1024, out.weight 512, biases 64/64/8
    assert zero_owners(spec, 2) == {
        "hidden.weight": 0,
        "inp.weight": 1,
        "out.weight": 1,
        "inp.bias": 1,
        "hidden.bias": 1,
        "out.bias": 1,
    }
    four = zero_owners(spec, 4)
    assert four["inp.weight"] == 1 and four["out.weight"] == 2
    assert {four[n] for n in ("inp.bias", "hidden.bias", "out.bias")} == {3}
    assert set(zero_owners(spec, 8).values()) == {0, 1, 2, 3, 4, 5}  # ranks 6 and 7: nothing


@pytest.mark.parametrize(
    ("d0", "world", "rank", "want"),
    [(64, 4, 1, (16, 16)), (8, 8, 7, (7, 1)), (10, 4, 3, (9, 1)), (3, 4, 3, (3, 0))],
)
def test_fsdp_rows_are_torch_chunk_on_dim_0(d0, world, rank, want) -> None:
    assert chunk_rows(d0, world, rank) == want


def test_the_quiz_numbers_follow_from_the_formulas() -> None:
    spec = ShardedSpec()
    assert [expected_bytes(spec, Way.ZERO, 4, r)["state"] for r in range(4)] == [
        32_772,  # 2 · 4096 · 4 + 4
        8_196,  # 2 · 1024 · 4 + 4
        4_100,  # 2 · 512 · 4 + 4
        1_100,  # 2 · 136 · 4 + 3 · 4
    ]
    assert expected_bytes(spec, Way.FSDP, 4, 1) == {"params": 5768, "grads": 5768, "state": 11560}
    assert expected_bytes(spec, Way.DDP, 8, 5) == {"params": 23072, "grads": 23072, "state": 46168}
    assert ideal_bytes(spec, Way.FSDP, 4)["params"] == 23072 / 4
    assert ring_sent("all_reduce", 4000, 4) == 2 * ring_sent("reduce_scatter", 4000, 4) == 6000


def test_the_table_round_trips_and_names_its_bad_fields() -> None:
    s = Scenario.from_mapping({"world_size": 2, KIND: {"steps": 3, "width": 32}})
    assert s.steps == 3 and not s.trains
    assert Scenario.from_mapping(s.to_dict()) == s
    for table, field in [({"width": 4}, "width"), ({"lr": 0}, "lr"), ({"what": 1}, "what")]:
        with pytest.raises(ScenarioError) as err:
            Scenario.from_mapping({"world_size": 2, KIND: table})
        assert err.value.field == f"{KIND}.{field}"
    with pytest.raises(ScenarioError, match="2 ranks"):
        Scenario.from_mapping({"world_size": 1, KIND: {}})


def check_record(rec) -> None:
    """What every rank reported, every step, against the formulas and against DDP."""
    part = rec.parts[KIND]
    spec = ShardedSpec.from_mapping(rec.scenario[KIND])
    world = rec.world_size
    assert rec.complete_prefix() == spec.steps
    for step in range(spec.steps):
        for way in WAYS:
            ranks = part.at(way.value, step)
            assert sorted(ranks) == list(range(world))
            for rank, e in ranks.items():
                want = expected_bytes(spec, way, world, rank)
                assert {w: getattr(e, w) for w in WHAT} == want, (way, step, rank)
                assert e.param_diff <= PARAM_TOL and e.grad_diff <= GRAD_TOL, (way, step, rank)


@pytest.mark.parametrize("name", ["sharded-2-ranks.jsonl", "sharded-4-ranks.jsonl"])
def test_the_recorded_runs_hold_what_the_formulas_say(name) -> None:
    check_record(record(load_recording(name)))
