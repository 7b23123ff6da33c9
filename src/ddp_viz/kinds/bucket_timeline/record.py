"""What a run folds of overlap's cost beside its steps (pure): each rank's ``backward_cost``,
measured after the loop when the scenario sets ``[train] overlap_cost``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ddp_viz.kinds.bucket_timeline.events import BackwardCost
from ddp_viz.model.event_base import Event

if TYPE_CHECKING:
    from ddp_viz.model.timeline import RunRecord

KIND = "bucket_timeline"


@dataclass
class BucketRecord:
    # rank -> what DDP's overlapped all-reduces cost its backward
    backward_cost: dict[int, BackwardCost] = field(default_factory=dict)

    def apply(self, event: Event) -> None:
        if isinstance(event, BackwardCost):
            self.backward_cost[event.rank] = event


def backward_cost(rec: RunRecord, rank: int) -> BackwardCost | None:
    """Rank ``rank``'s measured cost, once it arrived (None: not measured, or not yet)."""
    part = rec.parts.get(KIND)
    return part.backward_cost.get(rank) if isinstance(part, BucketRecord) else None
