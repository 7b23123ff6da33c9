"""The event of gradient accumulation: one micro-batch of an optimizer step (pure; defining it
registers it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddp_viz.model.event_base import Event, Grads


@dataclass(frozen=True)
class MicroStep(Event):
    """One micro-batch of an optimizer step with gradient accumulation (``[train] accumulate``
    above 1; runs without accumulation send none). ``grads`` is the rank's ``.grad`` right
    after this micro-batch's backward: a running sum, averaged by DDP whenever it synced.
    ``allreduced`` lists the buckets DDP's comm hook ran for in this backward (empty: the
    backward was skipped by ``no_sync``). ``loss`` is the loss before any 1/k scaling."""

    kind: ClassVar[str] = "micro_step"
    per_step: ClassVar[bool] = True
    run: int
    step: int
    rank: int
    micro: int
    loss: float
    grads: Grads
    allreduced: list[int] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    epoch: int = 0
    # DDP's require_backward_grad_sync when this micro-batch's forward and its backward began
    # (no_sync() sets it to False for the length of its block)
    sync_at_forward: bool = True
    sync_at_backward: bool = True
