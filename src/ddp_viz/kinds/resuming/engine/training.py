"""The training both parts of the lesson run, on the lesson's ranks and under torchrun.

One step is the ordinary DDP step on the rows a ``DistributedSampler`` gives the rank in that
epoch (``batch`` at a time, as a ``DataLoader`` over it would); its dropout draws from the
rank's own RNG (seeded ``seed + rank``), so what a resume must restore is: the weights, Adam's
state, the epoch the sampler shuffles by, the step, and every rank's RNG state.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler

from ddp_viz.kinds.resuming.spec import FEATURES, RestartSpec


def dataset(spec: RestartSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of a smooth target, the same on every rank."""
    g = torch.Generator().manual_seed(spec.seed * 7919 + 11)
    x = torch.randn(spec.rows, FEATURES, generator=g)
    w = torch.randn(FEATURES, 1, generator=g)
    return x, torch.sin(x @ w)


def build_model(spec: RestartSpec) -> nn.Module:
    torch.manual_seed(spec.seed)  # the same first weights a restarted script builds
    return nn.Sequential(
        nn.Linear(FEATURES, spec.hidden),
        nn.Tanh(),
        nn.Dropout(spec.dropout),
        nn.Linear(spec.hidden, 1),
    )


def weights_crc(model: nn.Module) -> str:
    """A CRC-32 of every parameter's bytes, in order: equal CRCs, equal weights bit for bit."""
    crc = 0
    for p in model.parameters():
        crc = zlib.crc32(p.detach().contiguous().numpy().tobytes(), crc)
    return f"{crc:08x}"


@dataclass
class Training:
    """One rank's model, optimizer, sampler and place in the run."""

    spec: RestartSpec
    rank: int
    world: int
    ddp: DDP
    opt: torch.optim.Adam
    sampler: DistributedSampler
    x: torch.Tensor
    y: torch.Tensor
    step: int = 0  # steps done
    masks: list[torch.Tensor] = field(default_factory=list)  # each step's dropout mask
    rows: list[list[int]] = field(default_factory=list)  # each step's rows

    @property
    def model(self) -> nn.Module:
        return self.ddp.module

    def per_epoch(self) -> int:
        return self.spec.steps_per_epoch(self.world)

    def train_step(self, epoch: int | None = None) -> None:
        """The next step; ``epoch`` overrides the epoch the step count says (a resume that
        lost it counts epochs from 0 again)."""
        b, i = self.spec.batch, self.step % self.per_epoch()
        epoch = self.step // self.per_epoch() if epoch is None else epoch
        keep = self.model[2]
        handle = keep.register_forward_hook(lambda m, i_, out: self._mask(out))
        try:
            # listing: restart-step
            self.sampler.set_epoch(epoch)
            rows = list(self.sampler)[i * b : (i + 1) * b]
            self.opt.zero_grad()
            loss = F.mse_loss(self.ddp(self.x[rows]), self.y[rows])
            loss.backward()
            self.opt.step()
            # end listing
        finally:
            handle.remove()
        self.rows.append(rows)
        self.step += 1

    def _mask(self, out: torch.Tensor) -> None:
        self.masks.append((out != 0).detach().clone())


def new_training(spec: RestartSpec, rank: int, world: int) -> Training:
    """What a script does when it starts, before any checkpoint is loaded."""
    x, y = dataset(spec)
    # listing: restart-build
    model = build_model(spec)
    torch.manual_seed(spec.seed + rank)  # each rank's own dropout
    ddp = DDP(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=spec.lr)
    sampler = DistributedSampler(range(spec.rows), world, rank, shuffle=True, seed=spec.seed)
    # end listing
    return Training(spec, rank, world, ddp, opt, sampler, x, y)


def save_checkpoint(t: Training, path: Path) -> int:
    """Every rank gathers its RNG state to rank 0; rank 0 writes the checkpoint (to a
    temporary name, then renames it: a rank killed while saving leaves the last one whole),
    and every rank waits at the barrier until it is there. Returns its bytes (0 off rank 0)."""
    rank, model, opt, step, per_epoch = t.rank, t.model, t.opt, t.step, t.per_epoch()
    states: list[Any] = [None] * t.world
    # listing: restart-save
    dist.all_gather_object(states, torch.get_rng_state())
    if rank == 0:
        checkpoint = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "epoch": step // per_epoch,
            "step": step,
            "rng": states,
        }
        torch.save(checkpoint, f"{path}.tmp")
        os.replace(f"{path}.tmp", path)
    dist.barrier()
    # end listing
    return path.stat().st_size if rank == 0 else 0


def load_checkpoint(path: Path, rank: int) -> dict[str, Any]:
    # listing: restart-load
    checkpoint = torch.load(path, map_location="cpu")
    # end listing
    return checkpoint


def restore(t: Training, checkpoint: dict[str, Any], leave_out: str = "") -> None:
    """Put the checkpoint's pieces back, all but ``leave_out`` (``no_rng``: the rank keeps
    the RNG its start seeded; ``no_optimizer``: Adam starts afresh; a resume without the
    epoch is its loop's doing, :func:`..resume.resumed`)."""
    model, opt, rank = t.model, t.opt, t.rank
    # listing: restart-restore
    model.load_state_dict(checkpoint["model"])
    if leave_out != "no_optimizer":
        opt.load_state_dict(checkpoint["optimizer"])
    if leave_out != "no_rng":
        torch.set_rng_state(checkpoint["rng"][rank])
    step = checkpoint["step"]
    # end listing
    t.step = step


def adam_step(opt: torch.optim.Adam) -> float:
    """Adam's ``step`` of the first parameter (every parameter's is the same)."""
    state = opt.state[opt.param_groups[0]["params"][0]]
    return float(state["step"]) if "step" in state else 0.0
