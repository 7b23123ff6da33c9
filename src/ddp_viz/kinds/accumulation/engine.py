"""One optimizer step made of several micro-batches, with ``no_sync`` where the scenario puts it.

This is the training script a learner would write, not a simulation of it: ``.grad`` adds the
micro-batches up because autograd accumulates, and whether a backward all-reduces is DDP's own
decision, which the comm hook observes (``fired``). The placement ``backward_only`` runs the
forward outside ``no_sync()``, so DDP has already prepared to synchronise when backward starts.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

import torch
from torch import nn

from ddp_viz.engine.data import Batch
from ddp_viz.engine.kind_parts import Pass, TrainingHooks
from ddp_viz.engine.reference import loss_and_grads, one_process_rows
from ddp_viz.engine.tensors import encode, encode_all
from ddp_viz.engine.trainer import Trainer
from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.model.protocol import Reference
from ddp_viz.model.scenario import Scenario


@dataclass
class AccumulatedStep:
    """What the micro-batches of one optimizer step left behind."""

    loss: float  # the mean of the micro-batches' (unscaled) losses
    events: list[MicroStep]
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
    events: list[MicroStep] = []
    losses: list[float] = []
    # listing: micro-batches
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
        # end listing
        t2 = time.monotonic()
        spans["forward"].append([t0, t1])
        spans["backward"].append([t1, t2])
        losses.append(loss.detach().item())
        grads = {
            n: encode(p.grad if p.grad is not None else torch.zeros_like(p), False)
            for n, p in model.named_parameters()
        }
        events.append(
            MicroStep(
                run, step, rank, j, losses[-1], grads, list(fired), rows, epoch, flags[0], flags[1]
            )
        )
    return AccumulatedStep(sum(losses) / len(losses), events, spans)


class AccumulationHooks(TrainingHooks):
    """Each optimizer step runs micro-batch by micro-batch, ``no_sync`` where the scenario
    puts it, one ``micro_step`` event each. With more than one micro-batch a step, rank 0 also
    runs one process beside the ranks that takes each step's rows as one batch (float64, never
    copying DDP's parameters), and its reference reports that run's parameters: what DDP with
    accumulation should end with."""

    solo: nn.Module | None = None

    def built(self, trainer: Trainer) -> None:
        oracle = trainer.oracle
        if oracle is not None and self.scenario.train.accumulate > 1:
            self.solo = copy.deepcopy(oracle.start)  # the parameters the run starts from

    def skips(self) -> frozenset[str]:
        # the single-process run goes beside the ranks on rank 0 only, and only with more
        # than one micro-batch a step: elsewhere its steps pay nothing for it
        return frozenset({"before_step"}) if self.solo is None else frozenset()

    def before_step(self, trainer: Trainer, step: int, batches: list[list[Batch]]) -> None:
        """One SGD step of the single-process run on this step's rows: every step, reported
        or not, so its parameters after the last step are a whole run's."""
        oracle = trainer.oracle
        if self.solo is None or oracle is None:
            return
        rows = oracle.rows(one_process_rows(batches))
        _, grads = loss_and_grads(self.solo, *rows, oracle.reduction)
        with torch.no_grad():
            for name, p in self.solo.named_parameters():
                p -= self.scenario.lr * grads[name]

    def reference(self, trainer: Trainer, event: Reference) -> Reference:
        if self.solo is None:
            return event
        return replace(event, one_process_params=encode_all(dict(self.solo.named_parameters())))

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
