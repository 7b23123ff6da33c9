"""A hang that ended: every rank in it went on, and the run with them (pure).

The listener names a hang once no rank has moved for the threshold, while it happens; it
cannot know whether the ranks will move again. Rank 0 writing a checkpoint or evaluating
alone while the others wait at the next all-reduce or barrier is such a stall, and it ends
when rank 0 arrives. Reported as a hang, a run that then finished every step and exited 0
read "ddp-viz verdict: hang: rank 0 never joined all_reduce #4".

So a hang after which every rank it lists sent a step or its clean last word, and none of
them failed or was lost, is a stall that resolved. The doctor reads the run without it (the
verdict is what else it found, or ✓) and says the stall in one line of its own: who held the
others, where, and that they went on. A hang that the run did not get past stays the
diagnosis.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddp_viz.kinds.watched.doctor import missing, running_frame
from ddp_viz.kinds.watched.events import (
    WatchDropped,
    WatchFailure,
    WatchHang,
    WatchRankLost,
)
from ddp_viz.model.event_base import Event
from ddp_viz.model.protocol import Timing
from ddp_viz.model.timeline import RunRecord, record

PART = "watched.stalls"


def _moved_after(events: list[Event], at: int, ranks: set[int]) -> bool:
    """Whether each of ``ranks`` stepped or said its last word after ``events[at]``, and none
    failed or was lost."""
    moved: set[int] = set()
    for e in events[at + 1 :]:
        rank = getattr(e, "rank", None)
        if rank not in ranks:
            continue
        if isinstance(e, WatchFailure | WatchRankLost) and not getattr(e, "thread", ""):
            return False
        if isinstance(e, Timing) or (isinstance(e, WatchDropped) and e.steps >= 0):
            moved.add(rank)
    return moved == ranks


def resolved(events: list[Event]) -> list[WatchHang]:
    """The hangs the run got past, in order."""
    out = []
    for i, e in enumerate(events):
        ranks = {s["rank"] for s in e.ranks} if isinstance(e, WatchHang) else set()
        if ranks and _moved_after(events, i, ranks):
            out.append(e)
    return out


@dataclass
class _Settled:
    """The record without its resolved hangs, built once per length of the record's events."""

    seen: int = -1
    stalls: tuple[WatchHang, ...] = ()
    rec: RunRecord | None = None

    def apply(self, e: Event) -> None:  # a part of the record: rebuilt when asked again
        pass


def settled(rec: RunRecord) -> tuple[RunRecord, list[WatchHang]]:
    """``rec`` as if its resolved hangs had not been named, and those hangs (``rec`` itself
    and none when it has none)."""
    part = rec.parts.get(PART)
    if not isinstance(part, _Settled):
        part = _Settled()
        rec.parts[PART] = part
    if part.seen != len(rec.events):
        stalls = resolved(rec.events)
        part.seen, part.stalls = len(rec.events), tuple(stalls)
        gone = {id(h) for h in stalls}
        part.rec = record(e for e in rec.events if id(e) not in gone) if stalls else None
    return (part.rec or rec), list(part.stalls)


def _waited(h: WatchHang) -> str:
    """Who the others waited for, and in what."""
    call, absent = missing(h)
    if call is None or not absent:
        return "every rank was quiet at once"
    who = ", ".join(f"rank {r}" for r in absent)
    return f"the others waited in {call['op']} #{call['seq']} for {who}"


def _holder(h: WatchHang) -> str:
    """:func:`_waited`, with what the one rank waited for was running."""
    _, absent = missing(h)
    places = {s["rank"]: s for s in h.ranks}
    doing = running_frame(places[absent[0]]) if len(absent) == 1 and absent[0] in places else ""
    return _waited(h) + (f" (running {doing})" if doing else "")


def stall_text(h: WatchHang) -> str:
    """One line for a hang the run got past."""
    return (
        f"a stall that resolved: no rank moved for {h.stalled_s:.1f} s (threshold "
        f"{h.threshold_s:.1f} s); {_holder(h)}, then every rank went on"
    )


def verdict_note(past: list[WatchHang]) -> str:
    """What a run found well adds to its verdict about the stalls it got past."""
    n = len(past)
    what = "a stall" if n == 1 else f"{n} stalls"
    return f"{what} resolved ({_waited(past[0])}, then every rank went on)"
