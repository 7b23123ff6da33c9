"""What DDP's comm hook did over one optimizer step's micro-batches (pure): the all-reduces it
ran, the backward passes that synchronised, and the prediction question's number."""

from __future__ import annotations

from typing import Any

from ddp_viz.model.rank_step import RankStep
from ddp_viz.model.timeline import RunRecord


def allreduces(rs: RankStep) -> int | None:
    """How many times DDP's comm hook ran in this optimizer step, over all its micro-batches
    (None for a step without micro-batches: a run without accumulation sends none)."""
    if not rs.micro:
        return None
    return sum(len(m.allreduced) for m in rs.micro)


def synced_backwards(rs: RankStep) -> int | None:
    """How many of the step's backward passes all-reduced (any bucket)."""
    return sum(1 for m in rs.micro if m.allreduced) if rs.micro else None


def allreduces_quantity(rec: RunRecord, quantity: Any) -> float | None:
    """A prediction's number: the hook's calls in step ``quantity.step`` (1-based) on
    ``quantity.rank``, once that rank's step is in (None before)."""
    i = quantity.step - 1
    if not 0 <= i < len(rec.steps):
        return None
    rs = rec.steps[i].ranks.get(quantity.rank)
    if rs is None or rs.loss is None:
        return None
    n = allreduces(rs)
    return None if n is None else float(n)
