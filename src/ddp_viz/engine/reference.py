"""The single-process reference: full-batch gradient and the hand-made shard average.

This is what a lesson without DDP can only simulate. It never touches a process group; it
runs in float64 so it is a sharper oracle than the float32 ranks it is compared with. It works
for any model spec: it copies the parameters the ranks hold going into the step.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from ddp_viz.engine.models import named_grad_tensors
from ddp_viz.engine.tensors import encode_all
from ddp_viz.model.protocol import Reference
from ddp_viz.model.scenario import Scenario


def _column(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64).unsqueeze(1)


def loss_and_grads(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, reduction: str
) -> tuple[float, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    loss = nn.functional.mse_loss(model(x), y, reduction=reduction)
    loss.backward()
    return loss.detach().item(), named_grad_tensors(model)


def one_process_rows(batches: list[list[tuple[int, list[int]]]]) -> list[int]:
    """The rows of a step once per epoch: what one process would train on (a row that a padding
    sampler gave to two ranks counts twice in DDP's average, once here; a row met again in the
    next epoch, by a step of micro-batches that spans two, counts again)."""
    seen = dict.fromkeys((e, i) for micro in batches for e, rows in micro for i in rows)
    return [i for _, i in seen]


class Oracle:
    """Rank 0's reference for every step of one run.

    It keeps its own float64 copy of the model (made once) and, each step, copies the
    parameters the ranks hold going into the step into it, instead of copying the module. It
    is told the rows every rank trains on in the step (with a sampler they change from step to
    step): the "full batch" is those rows, each once, under the same loss.
    """

    def __init__(self, scenario: Scenario, module: nn.Module) -> None:
        self.scenario = scenario
        self.source = module
        # made before DDP wraps ``module`` and before any hook is registered on it
        self.model = copy.deepcopy(module).double()
        self.x, self.y = list(scenario.x), list(scenario.y)
        self.reduction = scenario.train.loss_reduction
        # the parameters the run starts from, for a kind that reruns it in one process
        self.start = copy.deepcopy(self.model)

    def rows(self, rows: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        return _column([self.x[i] for i in rows]), _column([self.y[i] for i in rows])

    def step(
        self, run: int, step: int, batches: list[list[tuple[int, list[int]]]]
    ) -> tuple[Reference, dict[str, torch.Tensor]]:
        """The event, and the full-batch gradient tensors (float64) for the rank to compare
        DDP's average against. ``batches``: each rank's micro-batches in this step as (epoch,
        rows), one per rank unless the scenario accumulates gradients."""
        with torch.no_grad():
            for mine, theirs in zip(self.model.parameters(), self.source.parameters(), strict=True):
                mine.copy_(theirs)
        loss, full = loss_and_grads(
            self.model, *self.rows(one_process_rows(batches)), self.reduction
        )
        # what DDP should make of it, by hand: each micro-batch's gradient (its loss scaled as
        # the script scales it), added up over the micro-batches as .grad does, then averaged
        # over the ranks as the all-reduce does
        scale = self.scenario.train.loss_scale  # 1 without accumulation
        per_rank = []
        for micro in batches:
            grads = [
                loss_and_grads(self.model, *self.rows(rows), self.reduction)[1] for _, rows in micro
            ]
            per_rank.append({name: scale * sum(g[name] for g in grads) for name in full})
        manual = {name: sum(g[name] for g in per_rank) / len(per_rank) for name in full}
        event = Reference(
            run=run,
            step=step,
            full_batch_grads=encode_all(full),
            manual_average=encode_all(manual),
            full_batch_loss=loss,
            shard_sizes=[sum(len(rows) for _, rows in micro) for micro in batches],
        )
        return event, full
