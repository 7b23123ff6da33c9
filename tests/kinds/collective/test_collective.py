"""The ring's schedule, byte counts and record, pure (no torch, no Qt): what the engine
follows and the scene and the tests read."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.collective.model import (
    ALL_GATHER,
    REDUCE_SCATTER,
    chunk_bounds,
    contributions,
    naive_bytes_sent,
    ring_bytes_sent,
    ring_move,
    ring_steps,
)
from ddp_viz.model.scenario import Scenario, ScenarioError, field_errors


@pytest.mark.parametrize(("length", "world"), [(10, 4), (8, 4), (7, 3), (16, 8), (9, 2)])
def test_chunks_cut_like_tensor_split(length, world) -> None:
    bounds = chunk_bounds(length, world)
    sizes = [b - a for a, b in bounds]
    assert bounds[0][0] == 0 and bounds[-1][1] == length
    assert all(a == prev for (a, _), (_, prev) in zip(bounds[1:], bounds, strict=False))
    # the first length % world chunks are one value longer, as torch.tensor_split makes them
    assert sizes == [length // world + (1 if c < length % world else 0) for c in range(world)]


@pytest.mark.parametrize("world", [2, 3, 4, 8])
def test_every_rank_finishes_one_chunk_and_then_holds_all(world) -> None:
    half = world - 1
    for r in range(world):
        moves = [ring_move(s, r, world) for s in range(ring_steps(world))]
        assert [m.phase for m in moves] == [REDUCE_SCATTER] * half + [ALL_GATHER] * half
        # what a rank sends is what its right-hand neighbour receives in the same step
        for s, m in enumerate(moves):
            assert ring_move(s, m.to, world).receive == m.send
            assert ring_move(s, m.to, world).source == r
        assert contributions(half - 1, r, (r + 1) % world, world) == world
        assert all(contributions(2 * half - 1, r, c, world) == world for c in range(world))
        assert all(contributions(-1, r, c, world) == 1 for c in range(world))


@pytest.mark.parametrize(("length", "world"), [(10, 4), (8, 4), (1000, 8), (7, 3)])
def test_bytes_follow_the_textbook_formulas(length, world) -> None:
    ring = [ring_bytes_sent(length, world, r) for r in range(world)]
    # every rank sends 2 (N - 1) chunks: about 2 (N - 1) / N of the vector, exactly on average
    assert sum(ring) == 2 * (world - 1) * length * 4
    assert max(ring) - min(ring) <= 2 * 4  # uneven chunks: at most a value each half
    naive = [naive_bytes_sent(length, world, r) for r in range(world)]
    assert naive[0] == (world - 1) * length * 4 and set(naive[1:]) == {length * 4}


def test_a_collective_scenario_names_its_bad_fields() -> None:
    s = Scenario.from_mapping({"world_size": 8, "collective": {"length": 10}})
    assert s.steps == 14 and s.with_changes(world_size=3).steps == 4
    for data, field in [
        ({"world_size": 4, "collective": {"length": 3}}, "collective.length"),
        ({"world_size": 1, "collective": {"length": 3}}, "world_size"),
        ({"world_size": 4, "collective": {"length": 0}}, "collective.length"),
        ({"world_size": 4, "collective": {"sweep": [10, -1]}}, "collective.sweep[1]"),
        ({"world_size": 4, "collective": {"colour": 1}}, "collective.colour"),
        ({"world_size": 4, "steps": 5, "collective": {}}, "steps"),
    ]:
        with pytest.raises(ScenarioError) as err:
            Scenario.from_mapping(data)
        assert err.value.field == field
        assert field in field_errors(data)


def test_a_collective_scenario_round_trips(tmp_path) -> None:
    s = Scenario.from_mapping({"world_size": 3, "collective": {"length": 7, "sweep": [100]}})
    path = tmp_path / "ring.toml"
    path.write_text(s.to_toml())
    assert Scenario.load(path) == s == Scenario.from_mapping(s.to_dict())
