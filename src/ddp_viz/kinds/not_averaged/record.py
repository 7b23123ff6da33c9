"""What a run reported about what DDP does not average, folded for the views (pure): the
ranks' buffers before and after each forward, the reducer's error, the cost of
``find_unused_parameters`` and the checkpoint. The scene and the CLI read it from here."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import TYPE_CHECKING, Any

from ddp_viz.kinds.not_averaged import events as se
from ddp_viz.model.event_base import Event
from ddp_viz.model.tensors import tensor_sample

if TYPE_CHECKING:
    from ddp_viz.model.timeline import RunRecord

KIND = "not_averaged"


@dataclass
class BufferAgreement:
    """Do the ranks hold the same buffers at one moment of one step, and by how much not."""

    same: bool
    max_diff: float  # over every value of every buffer, between any rank and rank 0
    differing: list[str]  # buffer names that are not equal on every rank


@dataclass
class NotAveragedRecord:
    buffers: dict[tuple[int, int], se.BufferValues] = field(default_factory=dict)
    reducer_errors: dict[int, se.ReducerError] = field(default_factory=dict)
    saved: se.Checkpoint | None = None
    loaded: dict[int, se.Checkpoint] = field(default_factory=dict)
    cost: dict[int, se.UnusedCost] = field(default_factory=dict)

    def apply(self, event: Event) -> None:
        match event:
            case se.BufferValues(step=s, rank=r):
                self.buffers[(s, r)] = event
            case se.ReducerError(rank=r):
                self.reducer_errors[r] = event
            case se.Checkpoint(action="saved"):
                self.saved = event
            case se.Checkpoint(rank=r):
                self.loaded[r] = event
            case se.UnusedCost(rank=r):
                self.cost[r] = event

    def agreement(self, step: int, world_size: int, moment: str) -> BufferAgreement | None:
        """Whether every rank's buffers were equal ``before`` or ``after`` the forward of
        ``step``; None until every rank reported it. Equal means bit for bit."""
        got = [self.buffers.get((step, r)) for r in range(world_size)]
        if any(b is None for b in got):
            return None
        tables = [getattr(b, moment) for b in got]
        differing, worst = [], 0.0
        for name, first in tables[0].items():
            ref = tensor_sample(first)
            diffs = [_max_diff(tensor_sample(t.get(name, [])), ref) for t in tables[1:]]
            changed = any(t.get(name) != first for t in tables[1:])
            if changed:
                differing.append(name)
            worst = max([worst, *diffs])
        return BufferAgreement(not differing, worst, differing)

    def allreduce_counts(self) -> dict[bool, list[tuple[int, int]]] | None:
        """Per profiled step, (gradient buckets, bitmaps) all-reduced with the flag (True) and
        without it (False), as the lowest rank counted them; None when not counted."""
        cost = self.cost[min(self.cost)] if self.cost else None
        if cost is None or not cost.allreduces_with or not cost.allreduces_without:
            return None
        return {
            True: [split_allreduces(s) for s in cost.allreduces_with],
            False: [split_allreduces(s) for s in cost.allreduces_without],
        }

    def cost_ms(self) -> tuple[float, float] | None:
        """Median ms per step with and without ``find_unused_parameters``, over every rank's
        samples; None when the run did not time it."""
        with_flag = [t for c in self.cost.values() for t in c.with_flag]
        without = [t for c in self.cost.values() for t in c.without_flag]
        if not with_flag or not without:
            return None
        return median(with_flag) * 1e3, median(without) * 1e3


def split_allreduces(step: list[list[Any]]) -> tuple[int, int]:
    """One profiled step's all-reduces as (gradient buckets, used-parameter bitmaps): the
    bitmap is the one DDP all-reduces as ``int``, the buckets carry the model's floats."""
    bitmaps = sum(1 for dtype, _ in step if dtype == "int")
    return len(step) - bitmaps, bitmaps


def _max_diff(a: list[float], b: list[float]) -> float:
    return max((abs(x - y) for x, y in zip(a, b, strict=False)), default=0.0)


def part(rec: RunRecord) -> NotAveragedRecord:
    """The run's part (an empty one for a record made before the kind folded it)."""
    found = rec.parts.get(KIND)
    return found if isinstance(found, NotAveragedRecord) else NotAveragedRecord()
