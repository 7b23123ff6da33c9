"""Part one on the lesson's ranks: save under DDP, load on every rank, and resume four ways.

The run never stopped trains every step and saves the checkpoint on its way (rank 0 saves,
the barrier, every rank loads it back with ``map_location``). Each resume is a fresh start of
the script (model built from the seed, each rank's RNG seeded, a new Adam and a new DDP) that
loads the checkpoint with one piece left out, or none, trains the remaining steps and is held
against the run never stopped: its first step's rows and dropout mask, Adam's step after it,
and the final weights.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
import torch.distributed as dist

from ddp_viz.engine.outbox import Outbox
from ddp_viz.kinds.resuming.engine.training import (
    Training,
    adam_step,
    load_checkpoint,
    new_training,
    restore,
    save_checkpoint,
    weights_crc,
)
from ddp_viz.kinds.resuming.events import CheckpointLoaded, CheckpointSaved, ResumeCompared
from ddp_viz.kinds.resuming.spec import VARIANTS, RestartSpec


def never_stopped(
    spec: RestartSpec, ids: tuple[int, int, int], path: Path, outbox: Outbox
) -> tuple[Training, float]:
    """Train every step, saving after the resume step; every rank loads it back. Returns the
    training and Adam's step after the first step past the checkpoint."""
    run, rank, world = ids
    t = new_training(spec, rank, world)
    at, total = spec.resume_step(world), spec.total_steps(world)
    step_after = 0.0
    while t.step < total:
        t.train_step()
        if t.step == at + 1:
            step_after = adam_step(t.opt)
        if t.step == at:
            size = save_checkpoint(t, path)
            if rank == 0:
                keys = ["model", "optimizer", "epoch", "step", "rng"]
                outbox.add(CheckpointSaved(run, 0, at, size, keys, weights_crc(t.model)), now=True)
            started = time.perf_counter()
            dist.barrier()  # every rank has reported the save before any loads
            waited = time.perf_counter() - started
            rng = torch.get_rng_state()  # loading builds a model, which seeds: keep ours
            loaded = new_training(spec, rank, world)
            restore(loaded, load_checkpoint(path, rank))
            crc = weights_crc(loaded.model)
            torch.set_rng_state(rng)
            outbox.add(CheckpointLoaded(run, rank, at, crc, waited, "cpu"), now=True)
    return t, step_after


def resumed(spec: RestartSpec, rank: int, world: int, path: Path, leave_out: str) -> Training:
    """A fresh start that loads the checkpoint with ``leave_out`` left out and trains on."""
    t = new_training(spec, rank, world)
    at = spec.resume_step(world)
    restore(t, load_checkpoint(path, rank), "" if leave_out == "everything" else leave_out)
    per_epoch = spec.steps_per_epoch(world)
    while t.step < spec.total_steps(world):
        # without the saved epoch the script's own counter starts again from 0
        epoch = (t.step - at) // per_epoch if leave_out == "no_epoch" else None
        t.train_step(epoch)
    return t


def compare(
    base: Training, other: Training, at: int, step_after: float, ids: tuple[int, int, str]
) -> ResumeCompared:
    run, rank, variant = ids
    mask, want = other.masks[0], base.masks[at]
    diff = max(
        float((p - q).detach().abs().max())
        for p, q in zip(other.model.parameters(), base.model.parameters(), strict=True)
    )
    return ResumeCompared(
        run=run,
        rank=rank,
        variant=variant,  # type: ignore[arg-type]
        rows=other.rows[0],
        rows_want=base.rows[at],
        rows_start=base.rows[0],
        mask_diff=int((mask != want).sum()) if mask.shape == want.shape else mask.numel(),
        mask_size=want.numel(),
        adam_step=other_step(other, at),
        adam_step_want=step_after,
        max_diff=diff,
        weights=weights_crc(other.model),
        weights_want=weights_crc(base.model),
    )


def other_step(t: Training, at: int) -> float:
    """Adam's step after the resumed run's first step, read back from its optimizer: its
    step count now, less the steps it took after the first."""
    return adam_step(t.opt) - (t.step - at - 1)


def run_resumes(
    spec: RestartSpec, ids: tuple[int, int, int], folder: Path, out: Outbox
) -> Training:
    """Part one; returns the run never stopped (part two is held against it)."""
    run, rank, world = ids
    path = folder / "checkpoint.pt"
    base, step_after = never_stopped(spec, ids, path, out)
    at = spec.resume_step(world)
    for variant in VARIANTS:
        torch.manual_seed(12345)  # what the process did before: nothing a resume may rely on
        other = resumed(spec, rank, world, path, variant)
        out.add(compare(base, other, at, step_after, (run, rank, variant)), now=True)
    dist.barrier()
    if rank == 0:
        path.unlink(missing_ok=True)
    return base
