"""What DDP's comm hook did over one optimizer step's micro-batches (pure): the all-reduces it
ran, the backward passes that synchronised, and the prediction question's number."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.kinds.accumulation.record import micro_of
from ddp_viz.model.timeline import RunRecord

if TYPE_CHECKING:
    from ddp_viz.model.quiz import Quantity


def allreduces(micro: list[MicroStep]) -> int | None:
    """How many times DDP's comm hook ran in this optimizer step, over all its micro-batches
    (None for a step without micro-batches: a run without accumulation sends none)."""
    if not micro:
        return None
    return sum(len(m.allreduced) for m in micro)


def synced_backwards(micro: list[MicroStep]) -> int | None:
    """How many of the step's backward passes all-reduced (any bucket)."""
    return sum(1 for m in micro if m.allreduced) if micro else None


def allreduces_quantity(rec: RunRecord, quantity: Quantity) -> float | None:
    """A prediction's number: the hook's calls in step ``quantity.step`` (1-based) on
    ``quantity.rank``, once that rank's step is in (None before)."""
    i = quantity.step - 1
    if not 0 <= i < len(rec.steps):
        return None
    rs = rec.steps[i].ranks.get(quantity.rank)
    if rs is None or rs.loss is None:
        return None
    n = allreduces(micro_of(rec, i, quantity.rank))
    return None if n is None else float(n)
