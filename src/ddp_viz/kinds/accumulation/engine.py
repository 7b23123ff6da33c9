"""One optimizer step made of several micro-batches, with ``no_sync`` where the scenario puts it.

This is the training script a learner would write, not a simulation of it: ``.grad`` adds the
micro-batches up because autograd accumulates, and whether a backward all-reduces is DDP's own
decision, which the comm hook observes (``fired``). The placement ``backward_only`` runs the
forward outside ``no_sync()``, so DDP has already prepared to synchronise when backward starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field

import torch
from torch import nn

from ddp_viz.engine.data import Batch
from ddp_viz.engine.kind_parts import Pass, TrainingHooks
from ddp_viz.engine.tensors import encode
from ddp_viz.engine.trainer import Trainer
from ddp_viz.model import protocol
from ddp_viz.model.scenario import Scenario


@dataclass
class AccumulatedStep:
    """What the micro-batches of one optimizer step left behind."""

    loss: float  # the mean of the micro-batches' (unscaled) losses
    events: list[protocol.MicroStep]
    spans: dict[str, list[list[float]]] = field(default_factory=dict)


def run_micro_batches(
    *,
    run: int,
    step: int,
    rank: int,
    scenario: Scenario,
    ddp: nn.Module,
    model: nn.Module,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    tensors: Callable[[list[int]], tuple[torch.Tensor, torch.Tensor]],
    micro: list[Batch],
    fired: list[int],
) -> AccumulatedStep:
    """Forward and backward every micro-batch; ``fired`` is the list the comm hook appends
    bucket indices to (cleared here before each backward)."""
    placement, scale = scenario.train.no_sync, scenario.train.loss_scale
    last = len(micro) - 1
    spans: dict[str, list[list[float]]] = {"forward": [], "backward": []}
    events: list[protocol.MicroStep] = []
    losses: list[float] = []
    for j, (epoch, rows) in enumerate(micro):
        x, y = tensors(rows)
        quiet = placement != "none" and j < last
        fired.clear()
        flags: list[bool] = []  # DDP's require_backward_grad_sync at forward, at backward
        t0 = time.monotonic()
        if quiet and placement == "backward_only":
            flags.append(ddp.require_backward_grad_sync)
            loss = loss_fn(ddp(x), y)  # outside no_sync(): DDP prepares to all-reduce here
            t1 = time.monotonic()
            with ddp.no_sync():  # type: ignore[operator]
                flags.append(ddp.require_backward_grad_sync)
                (loss * scale).backward()
        else:
            with ddp.no_sync() if quiet else nullcontext():  # type: ignore[operator]
                flags.append(ddp.require_backward_grad_sync)
                loss = loss_fn(ddp(x), y)
                t1 = time.monotonic()
                flags.append(ddp.require_backward_grad_sync)
                (loss * scale).backward()
        t2 = time.monotonic()
        spans["forward"].append([t0, t1])
        spans["backward"].append([t1, t2])
        losses.append(loss.detach().item())
        grads = {
            n: encode(p.grad if p.grad is not None else torch.zeros_like(p), False)
            for n, p in model.named_parameters()
        }
        events.append(
            protocol.MicroStep(
                run, step, rank, j, losses[-1], grads, list(fired), rows, epoch, flags[0], flags[1]
            )
        )
    return AccumulatedStep(sum(losses) / len(losses), events, spans)


class AccumulationHooks(TrainingHooks):
    """Each optimizer step runs micro-batch by micro-batch, ``no_sync`` where the scenario
    puts it, one ``micro_step`` event each."""

    def forward_backward(self, trainer: Trainer, step: int, micro: list[Batch]) -> Pass:
        acc = run_micro_batches(
            run=self.run,
            step=step,
            rank=self.rank,
            scenario=self.scenario,
            ddp=trainer.ddp,
            model=trainer.model,
            loss_fn=trainer.loss_fn,
            tensors=trainer.tensors,
            micro=micro,
            fired=trainer.capture.fired,
        )
        return Pass(acc.loss, list(acc.events), acc.spans)


HOOKS = AccumulationHooks
