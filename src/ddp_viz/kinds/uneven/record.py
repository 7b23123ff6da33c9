"""What a run with uneven inputs folds beside its steps (pure): who ran out of batches after
how many steps, how each rank's group looks for a hang, each blocked rank's latest heartbeat,
the error that ended a wait (and what raised it), Join's shadow all-reduces, and the parameters
every rank ended with."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ddp_viz.kinds.uneven import events as ue
from ddp_viz.model.event_base import Event, Grads
from ddp_viz.model.timeline import RunRecord, RunStatus

if TYPE_CHECKING:
    from ddp_viz.model.quiz import Quantity

KIND = "uneven"
# Join's float32 ranks against one float64 process on the same rows (the stage and the report)
ONE_PROCESS_TOL = 1e-6


@dataclass
class UnevenRecord:
    out_of_data: dict[int, int] = field(default_factory=dict)  # rank -> steps it trained
    hang_checks: dict[int, ue.HangCheck] = field(default_factory=dict)  # rank -> its group
    waiting: dict[int, ue.Waiting] = field(default_factory=dict)  # rank -> latest heartbeat
    stalled: dict[int, ue.Stalled] = field(default_factory=dict)  # rank -> the timeout's error
    shadows: dict[tuple[int, int], ue.JoinShadow] = field(default_factory=dict)  # (step, rank)
    final_params: dict[int, Grads] = field(default_factory=dict)
    one_process: Grads | None = None  # under Join: the same run in one float64 process

    def apply(self, event: Event) -> None:
        match event:
            case ue.OutOfData(rank=r, steps=n):
                self.out_of_data[r] = n
            case ue.HangCheck(rank=r):
                self.hang_checks[r] = event
            case ue.Waiting(rank=r):
                self.waiting[r] = event
            case ue.Stalled(rank=r):
                self.stalled[r] = event
            case ue.JoinShadow(step=s, rank=r):
                self.shadows[(s, r)] = event
            case ue.FinalParams(rank=r, params=p, one_process=solo):
                self.final_params[r] = p
                self.one_process = solo or self.one_process


MISMATCH = "Detected mismatch between collectives"
# torch names the first rank missing, or with wait_all_ranks=True every one of them:
# "Rank 2 failed to pass monitoredBarrier", "Ranks 1, 2 failed to pass monitoredBarrier"
MISSING = re.compile(r"Ranks? (\d+(?:, \d+)*) failed to pass monitoredBarrier")


def ended_by(stall: ue.Stalled) -> str:
    """What raised the error that ended a wait, from its words: DETAIL's check
    (``"mismatch"``), ``monitored_barrier`` naming a rank, a peer closing the connection
    (``"peer"``), or the process group's ``"timeout"``."""
    if MISMATCH in stall.error:
        return "mismatch"
    if MISSING.search(stall.error):
        return "monitored_barrier"
    if "closed by peer" in stall.error.lower():
        return "peer"
    return "timeout"


def missing_ranks(stall: ue.Stalled) -> list[int]:
    """The ranks ``monitored_barrier``'s error names as not arrived."""
    return [int(r) for m in MISSING.findall(stall.error) for r in m.split(", ")]


def missing_text(stall: ue.Stalled) -> str:
    """``rank 2`` or ``ranks 1, 2``: the ranks the error names, as a sentence says them."""
    ranks = missing_ranks(stall)
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def found(un: UnevenRecord) -> ue.Stalled | None:
    """The first wait a debugging tool ended (DETAIL's check or ``monitored_barrier``), by
    how long it took: the one that found the hang."""
    waits = [s for s in un.stalled.values() if ended_by(s) in ("mismatch", "monitored_barrier")]
    return min(waits, key=lambda s: (s.waited_s, s.rank), default=None)


def missing_rank(rec: RunRecord, quantity: Quantity) -> float | None:
    """A prediction's number: the rank ``monitored_barrier``'s error named, once the run is
    over (None when no error named one)."""
    un = rec.parts.get(KIND)
    if not rec.done or un is None:
        return None
    named = [r for s in un.stalled.values() for r in missing_ranks(s)]
    return float(min(named)) if named else None


def rank_states(rec: RunRecord) -> dict[int, str]:
    """The Processes table's word for each rank held in a collective, as the stage tells it:
    "waiting" while its heartbeats come, then "stuck" for a rank whose step's all-reduce the
    others never joined and "waited" for one whose barrier the run ended. Without it a stalled
    run's ranks all read "done", in green. A run the learner cancelled says so instead."""
    un = rec.parts.get(KIND)
    if un is None or rec.status is RunStatus.CANCELLED:
        return {}
    out = {r: "waiting" for r in un.waiting}
    for r, stall in un.stalled.items():
        out[r] = "stuck" if stall.what == "all-reduce" else "waited"
    return out


def part(rec: RunRecord) -> UnevenRecord:
    return rec.parts[KIND]


def step_ranks(rec: RunRecord, n: int) -> list[int]:
    """The ranks that train step ``n``: a rank that ran out of batches before it is not
    waited for."""
    out = part(rec).out_of_data
    return [r for r in range(rec.world_size) if out.get(r, n + 1) > n]
