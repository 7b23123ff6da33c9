"""What DDP's overlapped all-reduces cost backward on a CPU (``[train] overlap_cost``).

Overlap hides communication behind backward, but on a CPU it is not free: gloo reduces on the
same cores as autograd, and the comm hook's callback takes the GIL. After the loop, on the
run's own model and batch, each rank runs backward passes alternating between DDP's
all-reduces (the run's comm hook, copying nothing, as at a step whose values are not
recorded) and ``ddp.no_sync()``, under which DDP launches no all-reduce at all. No optimizer
step; gradients are zeroed before each pass. Both ranks alternate in the same order, so the
synced passes meet.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from typing import TYPE_CHECKING

from ddp_viz.engine.kind_parts import TrainingHooks
from ddp_viz.kinds.bucket_timeline.events import BackwardCost

if TYPE_CHECKING:
    from ddp_viz.engine.trainer import Trainer

ROUNDS, WARMUP = 8, 2


def _one_pass(trainer: Trainer, sync: bool) -> list[float]:
    """One backward: ``[start, last gradient ready, returned, buckets the hook all-reduced]``."""
    ddp, capture = trainer.ddp, trainer.capture
    x, y = trainer.tensors(trainer.rows)
    trainer.model.zero_grad(set_to_none=True)
    capture.reset()
    capture.values = False
    with nullcontext() if sync else ddp.no_sync():
        loss = trainer.loss_fn(ddp(x), y)
        start = time.monotonic()
        loss.backward()
        end = time.monotonic()
    last = max((float(t) for _, t in capture.ready), default=end)
    return [start, last, end, float(len(capture.fired))]


def time_backward(trainer: Trainer) -> BackwardCost:
    """``ROUNDS`` passes each way after ``WARMUP`` rounds, the order swapped every round."""
    synced: list[list[float]] = []
    alone: list[list[float]] = []
    for i in range(WARMUP + ROUNDS):
        for sync in (True, False) if i % 2 == 0 else (False, True):
            span = _one_pass(trainer, sync)
            if i >= WARMUP:
                (synced if sync else alone).append(span)
    trainer.model.zero_grad(set_to_none=True)
    trainer.capture.reset()
    return BackwardCost(trainer.run, trainer.rank, synced, alone)


class OverlapCostHooks(TrainingHooks):
    """With ``[train] overlap_cost``: once a rank has trained every step, time its backward
    (after the loop and outside what a kind wraps it in, before the kinds' own finishing work)
    and send the measurement."""

    def finish(self, trainer: Trainer, completed: int) -> None:
        if self.scenario.train.flag("overlap_cost") and completed == trainer.my_steps:
            trainer.outbox.add(time_backward(trainer), now=True)


HOOKS = OverlapCostHooks
