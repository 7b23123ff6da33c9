"""The event that says what overlapped all-reduces cost backward (pure; defining it registers
it). A run measures it when its scenario sets ``[train] overlap_cost`` (the buckets lesson's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ddp_viz.model.event_base import Event


@dataclass(frozen=True)
class BackwardCost(Event):
    """What DDP's overlapped all-reduces cost backward on this rank (``[train] overlap_cost``):
    after the loop, on the run's model and batch, backward passes alternating between DDP's
    all-reduces (the run's comm hook) and ``no_sync()`` (no all-reduce at all), no optimizer
    step. Each pass as ``[start, last gradient ready, returned]`` (monotonic seconds) and the
    number of buckets the comm hook all-reduced in it (none under ``no_sync()``)."""

    kind: ClassVar[str] = "backward_cost"
    run: int
    rank: int
    synced: list[list[float]]
    alone: list[list[float]]
