"""Real gloo runs of the sharded kind: every rank's bytes against the formulas, ZeRO's and
FSDP's parameters against plain DDP's at every step, and the collectives each way issued."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from ddp_viz.kinds.sharded.model import KIND, LAYERS, ShardedSpec, Way, layer_bytes, zero_owners
from ddp_viz.model import protocol
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.timeline import RunStatus, record
from tests.kinds.sharded.test_model import check_record

pytestmark = pytest.mark.gloo

FSDP_ORDER = [  # forward, then backward with the next layer's all-gather prefetched
    ("forward", "all_gather", "inp"),
    ("forward", "all_gather", "hidden"),
    ("forward", "all_gather", "out"),
    ("backward", "all_gather", "out"),
    ("backward", "all_gather", "hidden"),
    ("backward", "reduce_scatter", "out"),
    ("backward", "all_gather", "inp"),
    ("backward", "reduce_scatter", "hidden"),
    ("backward", "reduce_scatter", "inp"),
]


def check_collectives(rec, spec: ShardedSpec) -> None:
    part, world = rec.parts[KIND], rec.world_size
    layers = layer_bytes(spec)
    owners = zero_owners(spec, world)
    full = sum(layers.values())
    for step in range(spec.steps):
        for rank in range(world):
            ddp = part.calls(Way.DDP.value, step, rank)
            assert [(c.op, c.phase, c.bytes_in) for c in ddp] == [("all_reduce", "backward", full)]
            zero = part.calls(Way.ZERO.value, step, rank)
            assert [c.op for c in zero] == ["all_reduce"] + ["broadcast"] * 6
            assert all(c.phase == "step" and c.src == owners[c.tensors[0]] for c in zero[1:])
            fsdp = part.calls(Way.FSDP.value, step, rank)
            assert [(c.phase, c.op, c.layer) for c in fsdp] == FSDP_ORDER
            for c in fsdp:
                whole, shard = layers[c.layer], layers[c.layer] // world
                sizes = (shard, whole) if c.op == "all_gather" else (whole, shard)
                assert (c.bytes_in, c.bytes_out) == sizes
            starts = [c.start for c in fsdp]
            assert starts == sorted(starts) and all(c.end >= c.start for c in fsdp)
            e = part.at(Way.FSDP.value, step)[rank]
            # in backward two layers are whole at once: the one computing and the prefetched
            pairs = [layers[a] + layers[b] for a, b in itertools.pairwise(LAYERS)]
            assert e.gathered == max(pairs), e.gathered_at


@pytest.mark.timeout(240)
@pytest.mark.parametrize("world", [2, 4])
def test_every_rank_holds_what_the_formulas_say_and_trains_ddps_weights(engine, world) -> None:
    spec = ShardedSpec(steps=3)
    scenario = Scenario.from_mapping({"world_size": world, KIND: spec.to_dict()})
    rec = record(engine.run(scenario))
    assert rec.status is RunStatus.FINISHED, rec.reason
    check_record(rec)
    check_collectives(rec, spec)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_cli_runs_the_lesson_at_eight_ranks() -> None:
    args = ["run", "--lesson", "sharded", "--world-size", "8", "--json"]
    res = subprocess.run(
        [sys.executable, "-m", "ddp_viz", *args],
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert res.returncode == 0, res.stderr
    events = [protocol.decode(x) for x in res.stdout.splitlines()[1:] if x.strip()]
    rec = record(events)
    assert rec.world_size == 8 and rec.status is RunStatus.FINISHED, rec.reason
    check_record(rec)  # all three ways, every step, every rank
    check_collectives(rec, ShardedSpec.from_mapping(rec.scenario[KIND]))
    part = rec.parts[KIND]
    assert [part.held("zero", 0, r, "state") for r in (6, 7)] == [0, 0]  # no parameter left
