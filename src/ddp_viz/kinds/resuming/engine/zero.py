"""ZeRO's sharded optimizer state, gathered on one rank to be saved (``consolidate_state_dict``).

Every rank trains one step of the lesson's model under DDP twice, from the same weights on the
same rows: once with ``ZeroRedundancyOptimizer`` over Adam, which keeps each parameter's Adam
state on one rank only, and once with a plain Adam, which keeps all of it on every rank. Then
every rank calls ``consolidate_state_dict(to=0)`` (a collective: each rank's shard of the state
is broadcast to rank 0), rank 0 saves ``state_dict()`` and holds it against plain Adam's state;
every other rank's ``state_dict()`` raises, and its error is reported.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.engine.outbox import Outbox
from ddp_viz.kinds.resuming.engine.training import build_model, dataset
from ddp_viz.kinds.resuming.events import ZeroConsolidated
from ddp_viz.kinds.resuming.spec import RestartSpec


def one_step(spec: RestartSpec, rank: int, zero: bool) -> tuple[DDP, torch.optim.Optimizer]:
    """The model from its seed, one step on this rank's own rows; dropout off, so both
    optimizers see the same averaged gradients."""
    x, y = dataset(spec)
    model = build_model(spec)
    model.eval()
    ddp = DDP(model)
    rows = slice(rank * spec.batch, (rank + 1) * spec.batch)
    if zero:
        # listing: restart-zero
        opt = ZeroRedundancyOptimizer(
            ddp.parameters(), optimizer_class=torch.optim.Adam, lr=spec.lr
        )
        # end listing
    else:
        opt = torch.optim.Adam(ddp.parameters(), lr=spec.lr)
    opt.zero_grad()
    F.mse_loss(ddp(x[rows]), y[rows]).backward()
    opt.step()
    return ddp, opt


def state_bytes(state: dict[object, dict[str, object]]) -> int:
    """Bytes of the tensors an optimizer's ``state`` holds (Adam: its two averages and step)."""
    return sum(
        v.numel() * v.element_size()
        for per_param in state.values()
        for v in per_param.values()
        if isinstance(v, torch.Tensor)
    )


def state_diff(full: dict[int, dict[str, object]], plain: torch.optim.Optimizer) -> float:
    """The largest difference between the consolidated state and plain Adam's, over every
    parameter and every tensor of its state (inf when a parameter or a tensor is missing)."""
    want = plain.state_dict()["state"]
    if set(full) != set(want):
        return float("inf")
    worst = 0.0
    for index, per_param in want.items():
        for key, value in per_param.items():
            got = full[index].get(key)
            if not isinstance(got, torch.Tensor) or got.shape != value.shape:
                return float("inf")
            worst = max(worst, float((got.double() - value.double()).abs().max()))
    return worst


def owned_names(model: nn.Module, opt: ZeroRedundancyOptimizer) -> list[str]:
    """The parameters whose Adam state this rank's local optimizer holds, by name."""
    mine = {id(p) for group in opt.optim.param_groups for p in group["params"]}
    return [n for n, p in model.named_parameters() if id(p) in mine]


def run_zero(spec: RestartSpec, ids: tuple[int, int, int], folder: Path, out: Outbox) -> None:
    run, rank, world = ids
    path = folder / "zero.pt"
    ddp, opt = one_step(spec, rank, zero=True)
    plain_ddp, plain = one_step(spec, rank, zero=False)
    assert isinstance(opt, ZeroRedundancyOptimizer)
    local = state_bytes(opt.optim.state_dict()["state"])
    weights = max(
        float((p - q).detach().abs().max())
        for p, q in zip(ddp.parameters(), plain_ddp.parameters(), strict=True)
    )
    full: dict[str, object] = {}
    refused = ""
    # listing: restart-zero-save
    opt.consolidate_state_dict(to=0)  # on every rank: it is a collective
    if rank == 0:
        full = opt.state_dict()  # every rank's shard, gathered here
        torch.save({"model": ddp.module.state_dict(), "optimizer": full}, path)
    # end listing
    else:
        try:
            opt.state_dict()
        except RuntimeError as e:  # what a rank that was not `to` is told
            refused = str(e).split(". ")[0]
    state = full.get("state", {}) if rank == 0 else {}
    assert isinstance(state, dict)
    out.add(
        ZeroConsolidated(
            run=run,
            rank=rank,
            world=world,
            owned=owned_names(ddp.module, opt),
            state_bytes=local,
            full_params=len(state) if rank == 0 else -1,
            full_bytes=state_bytes(state) if rank == 0 else -1,
            saved_bytes=path.stat().st_size if rank == 0 else -1,
            state_diff=state_diff(state, plain) if rank == 0 else -1.0,
            weights_diff=weights,
            refused=refused,
        ),
        now=True,
    )
    if rank == 0:
        path.unlink(missing_ok=True)
