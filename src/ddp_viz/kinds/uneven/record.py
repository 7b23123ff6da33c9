"""What a run with uneven inputs folds beside its steps (pure): who ran out of batches after
how many steps, each blocked rank's latest heartbeat, the timeout's error, Join's shadow
all-reduces, and the parameters every rank ended with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ddp_viz.kinds.uneven import events as ue
from ddp_viz.model.event_base import Event, Grads

if TYPE_CHECKING:
    from ddp_viz.model.timeline import RunRecord

KIND = "uneven"


@dataclass
class UnevenRecord:
    out_of_data: dict[int, int] = field(default_factory=dict)  # rank -> steps it trained
    waiting: dict[int, ue.Waiting] = field(default_factory=dict)  # rank -> latest heartbeat
    stalled: dict[int, ue.Stalled] = field(default_factory=dict)  # rank -> the timeout's error
    shadows: dict[tuple[int, int], ue.JoinShadow] = field(default_factory=dict)  # (step, rank)
    final_params: dict[int, Grads] = field(default_factory=dict)
    one_process: Grads | None = None  # under Join: the same run in one float64 process

    def apply(self, event: Event) -> None:
        match event:
            case ue.OutOfData(rank=r, steps=n):
                self.out_of_data[r] = n
            case ue.Waiting(rank=r):
                self.waiting[r] = event
            case ue.Stalled(rank=r):
                self.stalled[r] = event
            case ue.JoinShadow(step=s, rank=r):
                self.shadows[(s, r)] = event
            case ue.FinalParams(rank=r, params=p, one_process=solo):
                self.final_params[r] = p
                self.one_process = solo or self.one_process


def part(rec: RunRecord) -> UnevenRecord:
    return rec.parts[KIND]


def step_ranks(rec: RunRecord, n: int) -> list[int]:
    """The ranks that train step ``n``: a rank that ran out of batches before it is not
    waited for."""
    out = part(rec).out_of_data
    return [r for r in range(rec.world_size) if out.get(r, n + 1) > n]
