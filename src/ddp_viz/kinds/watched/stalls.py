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

from dataclasses import dataclass, field

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


@dataclass
class _Open:
    """A hang named, and the ranks in it that have not gone on since."""

    hang: WatchHang
    waiting: set[int]
    failed: bool = False
    # the hang's ranks, kept: apply runs at every event while the hang is open
    ranks: frozenset[int] = field(init=False)

    def __post_init__(self) -> None:
        self.ranks = frozenset(self.waiting)

    def apply(self, e: Event) -> None:
        rank = getattr(e, "rank", None)
        if rank not in self.ranks:
            return
        if isinstance(e, WatchFailure | WatchRankLost) and not getattr(e, "thread", ""):
            self.failed = True
        elif isinstance(e, Timing) or (isinstance(e, WatchDropped) and e.steps >= 0):
            self.waiting.discard(rank)

    @property
    def resolved(self) -> bool:
        return not self.waiting and not self.failed


@dataclass
class _Settled:
    """A part of the record, folded as events arrive (a step costs a look at each hang still
    open): the hangs named so far, and the record without the resolved ones, built again only
    when another one resolves, else kept current event by event. Scanning the whole record
    at each look made a long watched run's live report quadratic: the watch looks at every
    step's digests."""

    source: RunRecord
    hangs: list[_Open] = field(default_factory=list)
    past: tuple[WatchHang, ...] = ()
    rec: RunRecord | None = None

    def apply(self, e: Event) -> None:
        for h in self.hangs:
            if not h.resolved and not h.failed:
                h.apply(e)
        ranks = {s["rank"] for s in e.ranks} if isinstance(e, WatchHang) else set()
        if ranks:
            self.hangs.append(_Open(e, set(ranks)))  # type: ignore[arg-type]
        past = tuple(h.hang for h in self.hangs if h.resolved)
        if past != self.past:
            self.past = past
            gone = {id(h) for h in past}
            events = [x for x in self.source.events if id(x) not in gone]
            self.rec = record(events) if past else None
        elif self.rec is not None:
            self.rec.apply(e)


def resolved(events: list[Event]) -> list[WatchHang]:
    """The hangs the run got past, in order."""
    part = _Settled(RunRecord())
    for e in events:
        part.source.events.append(e)
        part.apply(e)
    return list(part.past)


def settled(rec: RunRecord) -> tuple[RunRecord, list[WatchHang]]:
    """``rec`` as if its resolved hangs had not been named, and those hangs (``rec`` itself
    and none when it has none)."""
    part = rec.parts.get(PART)
    if not isinstance(part, _Settled):  # first asked: read what came so far, then fold the rest
        part = _Settled(rec)
        events = list(rec.events)
        rec.events.clear()
        for e in events:  # as if they arrived now: the record's events grow one by one
            rec.events.append(e)
            part.apply(e)
        rec.parts[PART] = part
    return (part.rec or rec), list(part.past)


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
