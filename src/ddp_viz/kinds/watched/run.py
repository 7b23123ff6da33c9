"""What a watched run (a user's own script under ``ddp-viz watch``) says, read from its
record (pure): where each rank runs, how long its steps take, which rank reached the
all-reduce last, and whether a fully captured step's averages are identical on every rank.

Times are the listener's clock: it moved every rank's times onto it, so ranks on different
machines compare directly.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ddp_viz.kinds.watched.events import WatchDropped, WatchedRank
from ddp_viz.model.arrivals import arrivals, last_to_arrive
from ddp_viz.model.event_base import Event
from ddp_viz.model.timeline import RunRecord, StepRecord


@dataclass(frozen=True)
class RankPlace:
    rank: int
    host: str
    pid: int
    local_rank: int
    clock_offset_s: float


PLACES = "watched.places"  # the record's part that holds them


class Places:
    """The watched ranks' places, folded as the record's events arrive: a part of the record
    (``RunRecord.parts``), so the caller's record holds what was read, and views asking at
    display rate while the run grows never read its events twice."""

    def __init__(self) -> None:
        self.found: dict[int, RankPlace] = {}
        self.ended: set[int] = set()  # ranks that sent their last word (their process exits)

    def apply(self, e: Event) -> None:
        if isinstance(e, WatchedRank):
            self.found[e.rank] = RankPlace(e.rank, e.host, e.pid, e.local_rank, e.clock_offset_s)
        elif isinstance(e, WatchDropped):
            self.ended.add(e.rank)


def places(rec: RunRecord) -> dict[int, RankPlace]:
    """Each watched rank's host, pid, local rank and clock offset (none for our own runs)."""
    if not is_watched(rec):
        return {}
    return dict(_places(rec).found)


def ranks_ended(rec: RunRecord) -> set[int]:
    """The watched ranks whose training is over: each sent its last word as its process
    exits, while the launcher may still be winding down (the run is not over yet)."""
    return set(_places(rec).ended) if is_watched(rec) else set()


def _places(rec: RunRecord) -> Places:
    part = rec.parts.get(PLACES)
    if not isinstance(part, Places):  # first asked: read what came so far, then fold the rest
        part = Places()
        for e in rec.events:
            part.apply(e)
        rec.parts[PLACES] = part
    return part


def is_watched(rec: RunRecord) -> bool:
    return bool(rec.scenario.get("watched"))


def seen_steps(rec: RunRecord) -> int:
    """Steps any rank reported (timings at least; a watched record's from its history)."""
    from ddp_viz.kinds.watched.history import HISTORY, History

    part = rec.parts.get(HISTORY)
    if isinstance(part, History):
        return part.seen_steps()
    return sum(1 for st in rec.steps if any(rs.spans for rs in st.ranks.values()))


def _start(st: StepRecord, rank: int) -> float | None:
    rs = st.ranks.get(rank)
    spans = rs.spans.get("forward") if rs else None
    return spans[0][0] if spans else None


def step_time(rec: RunRecord, step: int, rank: int) -> float | None:
    """From this step's forward to the next one's, on one rank: a whole training step."""
    if step + 1 >= len(rec.steps):
        return None
    a, b = _start(rec.steps[step], rank), _start(rec.steps[step + 1], rank)
    return None if a is None or b is None else b - a


def after_first_ms(st: StepRecord) -> dict[int, float]:
    """Each rank's arrival at the all-reduce (its first bucket reaching the comm hook), in ms
    after the first rank's: what the others waited for it. What the plots draw for a watched
    run: the first rank is at 0 and a straggler's line above the others, wherever its delay
    was. (A rank's own forward-to-first-bucket time misses a delay before its forward, and
    forward to forward comes out alike on every rank, since all wait for the last.)"""
    got = arrivals(st)
    first = min(got.values(), default=0.0)
    return {r: (at - first) * 1e3 for r, at in got.items()}


def stragglers(rec: RunRecord, upto: int) -> Counter[int]:
    """How often each rank was the last to reach the all-reduce, in steps 0..upto."""
    counts: Counter[int] = Counter()
    for st in rec.steps[: upto + 1]:
        found = last_to_arrive(st, rec.world_size)
        if found is not None:
            counts[found[0]] += 1
    return counts


def latest_full(rec: RunRecord, upto: int) -> StepRecord | None:
    """The last step up to ``upto`` that every rank captured in full."""
    for st in reversed(rec.steps[: upto + 1]):
        if st.complete(rec.world_size):
            return st
    return None
