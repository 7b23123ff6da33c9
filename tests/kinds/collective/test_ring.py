"""The all-reduce by hand on real gloo ranks: naive and ring against dist.all_reduce, bit for
bit, at 2, 3, 4 and 8 ranks, for lengths that do and do not divide by the world size; every
chunk's move against the schedule, and every rank's bytes against the formulas."""

from __future__ import annotations

import pytest
import torch

from ddp_viz.kinds.collective.engine import vector
from ddp_viz.kinds.collective.model import (
    chunk_bounds,
    naive_bytes_sent,
    ring_bytes_sent,
    ring_move,
    ring_steps,
)
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.tensors import tensor_sample
from ddp_viz.model.timeline import RunStatus, record

pytestmark = pytest.mark.gloo


def scenario(world: int, length: int) -> Scenario:
    return Scenario.from_mapping(
        {"world_size": world, "collective": {"length": length, "sweep": [64], "repeats": 1}}
    )


@pytest.mark.parametrize(
    ("world", "length"), [(2, 8), (2, 9), (3, 9), (3, 10), (4, 12), (4, 10), (8, 16), (8, 21)]
)
def test_ring_and_naive_equal_dist_all_reduce_and_move_what_the_schedule_says(
    engine, world, length
) -> None:
    rec = record(engine.run(scenario(world, length)))
    assert rec.status is RunStatus.FINISHED, rec.reason
    col = rec.parts["collective"]
    # the sum, computed here from the same vectors the ranks drew
    total = sum(vector(0, r, length) for r in range(world))
    for r in range(world):
        assert tensor_sample(col.inputs[r].values) == vector(0, r, length).tolist()
        for algo in ("naive", "ring", "all_reduce"):
            result = col.results[(algo, r)]
            assert result.equal, (algo, r)
            assert torch.equal(torch.tensor(tensor_sample(result.values)), total), (algo, r)
        assert col.results[("ring", r)].bytes_sent == ring_bytes_sent(length, world, r)
        assert col.results[("naive", r)].bytes_sent == naive_bytes_sent(length, world, r)
    bounds = chunk_bounds(length, world)
    assert rec.complete_prefix() == ring_steps(world)
    for s in range(ring_steps(world)):
        for r, move in col.steps[s].items():
            want = ring_move(s, r, world)
            assert (move.phase, move.sent, move.to, move.received, move.source) == (
                want.phase,
                want.send,
                want.to,
                want.receive,
                want.source,
            )
            a, b = bounds[move.sent]
            assert move.bytes_sent == (b - a) * 4
    # after the last step the received chunk is the finished sum
    for move in col.steps[ring_steps(world) - 1].values():
        a, b = bounds[move.received]
        assert tensor_sample(move.chunk) == total[a:b].tolist()
    assert {t.algo for t in col.timings} == {"naive", "ring", "all_reduce"}
    assert all(t.seconds > 0 for t in col.timings)
