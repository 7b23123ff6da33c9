"""The restart lesson's run on real gloo ranks: part one on the lesson's ranks (save, load,
resume four ways, :mod:`.resume`; sharded state, :mod:`.reshard` and :mod:`.zero`), part two
under torchrun started by rank 0 (:mod:`.torchrun`), both against the same run never
stopped."""

from __future__ import annotations

import torch.distributed as dist

from ddp_viz.engine.kind_parts import run_folder
from ddp_viz.engine.outbox import Outbox
from ddp_viz.kinds.resuming.engine.reshard import run_reshard
from ddp_viz.kinds.resuming.engine.resume import run_resumes
from ddp_viz.kinds.resuming.engine.torchrun import run_torchrun
from ddp_viz.kinds.resuming.engine.zero import run_zero
from ddp_viz.kinds.resuming.spec import KIND, RestartSpec
from ddp_viz.model.scenario import Scenario


def run_restart(run: int, rank: int, scenario: Scenario, outbox: Outbox) -> int:
    spec = scenario.table(KIND)
    assert isinstance(spec, RestartSpec)
    world = scenario.world_size
    folder = run_folder()
    base = run_resumes(spec, (run, rank, world), folder, outbox)
    run_reshard(spec, (run, rank, world), folder, outbox)
    run_zero(spec, (run, rank, world), folder, outbox)
    outbox.flush()
    dist.barrier()
    if rank == 0:  # torchrun starts its own workers: one launcher is enough
        outbox.add(*run_torchrun(spec, run, world, base, folder / "torchrun"))
    outbox.flush()
    return 1


PROGRAM = run_restart
