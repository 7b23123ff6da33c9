"""Sharded state saved at N ranks and loaded at M (``torch.distributed.checkpoint``).

Every rank trains one Adam step of the lesson's model sharded with FSDP2 over all the ranks,
keeps the whole parameters (``full_tensor()``), and saves model and optimizer with
``dcp.save``: each rank writes its own file. The first N − 1 ranks (1 at 2 ranks) then build
the model afresh from its seed (the weights before the step), sharded over a group of their
own, and ``dcp.load`` it: each takes the rows its new shard needs from whichever files hold
them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

from ddp_viz.engine.outbox import Outbox
from ddp_viz.kinds.resuming.engine.training import build_model, dataset
from ddp_viz.kinds.resuming.events import ReshardCompared
from ddp_viz.kinds.resuming.spec import RestartSpec


def sharded(spec: RestartSpec, mesh: DeviceMesh) -> tuple[nn.Module, torch.optim.Adam]:
    """The lesson's model from its seed, sharded over ``mesh``: a model that loads the
    checkpoint starts from the weights before the saved step, so only the load makes them
    equal to the saved ones."""
    model = build_model(spec)
    for layer in (model[0], model[3]):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.Adam(model.parameters(), lr=spec.lr)


def run_reshard(spec: RestartSpec, ids: tuple[int, int, int], folder: Path, out: Outbox) -> None:
    run, rank, world = ids
    path = folder / "dcp"
    x, y = dataset(spec)
    model, opt = sharded(spec, init_device_mesh("cpu", (world,)))
    model.eval()  # no dropout: the step is the same whatever each rank's RNG
    opt.zero_grad()
    F.mse_loss(model(x[: spec.batch]), y[: spec.batch]).backward()
    opt.step()
    full = {n: p.full_tensor().detach().clone() for n, p in model.named_parameters()}
    # listing: restart-dcp-save
    model_state, optim_state = get_state_dict(model, opt)
    dcp.save({"model": model_state, "optim": optim_state}, checkpoint_id=path)
    # end listing
    size = (path / f"__{rank}_0.distcp").stat().st_size
    m = max(1, world - 1)
    group = dist.new_group(list(range(m)))  # every rank calls new_group
    rows: dict[str, int] = {}
    diff, step = -1.0, 0.0
    if rank < m:
        # a name of this run's own: DTensor caches plans by mesh, and meshes are equal by
        # ranks and names, not by group; a warm rank's next run with a mesh of these ranks
        # (its whole world at 2 ranks fewer) was handed this run's dead group
        # ("Could not resolve the process group registered under the name 1")
        mesh = DeviceMesh.from_group(group, "cpu", mesh_dim_names=(f"run{run}-loaded",))
        model, opt = sharded(spec, mesh)
        # listing: restart-dcp-load
        model_state, optim_state = get_state_dict(model, opt)
        state = {"model": model_state, "optim": optim_state}
        dcp.load(state, checkpoint_id=path, process_group=group)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        # end listing
        diff = max(
            float((p.full_tensor().detach() - full[n]).abs().max())
            for n, p in model.named_parameters()
        )
        rows = {n: _local(p).shape[0] for n, p in model.named_parameters()}
        step = float(opt.state[next(iter(model.parameters()))]["step"])
    out.add(ReshardCompared(run, rank, world, m, size, rows, diff, step), now=True)
    dist.barrier()
    if rank < m:
        dist.destroy_process_group(group)
    if rank == 0:
        shutil.rmtree(path, ignore_errors=True)


def _local(p: torch.Tensor) -> torch.Tensor:
    return p.to_local() if isinstance(p, DTensor) else p
