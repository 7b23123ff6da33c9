"""What a run with gradient accumulation folds beside its steps (pure): each rank's micro-batches
of each optimizer step, in order, as its ``micro_step`` events brought them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.model.event_base import Event

if TYPE_CHECKING:
    from ddp_viz.model.timeline import RunRecord, StepRecord

KIND = "accumulation"


@dataclass
class AccumulationRecord:
    # (step, rank) -> that rank's micro-batches of that optimizer step, in order
    micro: dict[tuple[int, int], list[MicroStep]] = field(default_factory=dict)

    def apply(self, event: Event) -> None:
        if isinstance(event, MicroStep):
            self.micro.setdefault((event.step, event.rank), []).append(event)


def micro_of(rec: RunRecord, step: int, rank: int) -> list[MicroStep]:
    """Rank ``rank``'s micro-batches of step ``step`` (0-based); none for a run without them."""
    part = rec.parts.get(KIND)
    return part.micro.get((step, rank), []) if isinstance(part, AccumulationRecord) else []


def step_micro(rec: RunRecord, st: StepRecord) -> dict[int, list[MicroStep]]:
    """Every rank's micro-batches of step ``st``, by rank (the ranks that reported the step)."""
    return {r: micro_of(rec, st.step, r) for r in sorted(st.ranks)}


def rows_of_step(rec: RunRecord, st: StepRecord, rank: int) -> list[tuple[int, int]] | None:
    """(epoch, row) for every row ``rank`` trained on in this step, micro-batch by micro-batch:
    a step's micro-batches may span two epochs (None: no micro-batches, the core's rows)."""
    micro = micro_of(rec, st.step, rank)
    return [(m.epoch, row) for m in micro for row in m.rows] if micro else None
