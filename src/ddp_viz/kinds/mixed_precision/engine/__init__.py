"""Mixed precision under DDP on real gloo ranks: DDP's five arms (``arms``) and, with
``fsdp``, FSDP2 with and without bfloat16 parameters (``fsdp``), step by step in lockstep."""

from __future__ import annotations

import torch

from ddp_viz.engine.outbox import Outbox
from ddp_viz.kinds.mixed_precision.engine.arms import (
    Replica,
    Wire,
    batch_rows,
    dataset,
    refusal,
    report,
    watching_all_reduce,
)
from ddp_viz.kinds.mixed_precision.engine.fsdp import ShardedReplica, Tally, watching_fsdp
from ddp_viz.kinds.mixed_precision.events import PrecisionRefused
from ddp_viz.kinds.mixed_precision.model import ARMS, KIND, SHARDED_ARMS, PrecisionSpec
from ddp_viz.model.scenario import Scenario


def run_precision(run: int, rank: int, scenario: Scenario, outbox: Outbox) -> int:
    """The lesson's run: every arm, step by step; returns the steps."""
    spec = scenario.table(KIND)
    assert isinstance(spec, PrecisionSpec)
    world = scenario.world_size
    x, y = dataset(spec)
    wire, tally = Wire(), Tally()
    with watching_all_reduce(wire), watching_fsdp(tally):
        refused = refusal(spec)
        if rank == 0:
            outbox.add(PrecisionRefused(run, "bf16_compress_hook", refused))
        reps = [Replica(a, spec, wire) for a in ARMS]
        shards = [ShardedReplica(a, spec, tally) for a in SHARDED_ARMS] if spec.fsdp else []
        for step in range(spec.steps):
            rows = batch_rows(step, rank, world, spec.batch)
            base: list[torch.Tensor] = []
            for rep in reps:
                target = y[rows]
                if rep.arm.scaler and step + 1 == spec.spike_step and rank == world - 1:
                    target = target + spec.spike  # an outlier batch on the last rank alone
                before = rep.params()
                out = rep.step(x[rows], target)
                if not base:
                    base = rep.params()  # the float32 arm comes first
                outbox.add(report(rep, base, before, (run, rank, step, world, out)))
            for shard in shards:
                outbox.add(shard.event((run, rank, step), x[rows], y[rows]))
    outbox.flush()
    return spec.steps


PROGRAM = run_precision
