"""A watched run's history, bounded (pure): a run of 100,000 steps on 8 ranks must not fill
the window's memory, nor the listener's.

Every step's events make a few kilobytes of Python objects per rank (its timings' spans and
buckets, and on steps captured in full every tensor's values), so the record keeps them for the
newest ``KEEP_STEPS`` steps and for every ``KEEP_EVERY``-th step before those (the page can
still step back to one of them; past ``KEEP_OLD`` such steps every other one goes, so they stay
between ``KEEP_OLD / 2`` and ``KEEP_OLD``). An older step's other records are emptied and its
events leave ``RunRecord.events``, ``CHUNK`` steps at a time; its empty ``StepRecord`` stays
(a few hundred bytes: the step list keeps its numbering). What the page and the doctor read
from every step is folded here first, as each step's timings arrive, into a few bytes a step:
the rank last at the all-reduce and how long the first waited for it, and whether any rank
reported the step. (A replayed recording is thinned as it is read, alike.)"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any

from ddp_viz.kinds.watched.agree import averages_identical, non_finite_average
from ddp_viz.kinds.watched.events import KIND, WatchDropped
from ddp_viz.model import protocol, step_memo
from ddp_viz.model.arrivals import last_to_arrive

if TYPE_CHECKING:
    from ddp_viz.model.timeline import RunRecord, StepRecord

KEEP_STEPS = 2000
KEEP_EVERY = 64
KEEP_OLD = 256  # the older steps kept whole: every KEEP_EVERY-th, the stride doubling past this
CHUNK = 500
# The recording (``watch --record``) keeps every step's lines up to this step; past it, every
# 2nd step's, past twice that every 4th, and so on: a doubling of the run adds as many lines as
# the first RECORD_ALL / 2 steps, so 100,000 steps write about 27,000 steps' lines, not all.
RECORD_ALL = 10_000
HISTORY = KIND  # the record's part (RunRecord.parts): the kind's own, under its id
# a step's events that the emptied steps no longer need (the rest: the run's own, the doctor's)
STEP_EVENTS = (protocol.LocalGrad, protocol.AveragedGrad, protocol.Params, protocol.Timing)


class History:
    """Per step: the rank last to reach the all-reduce (-1: fewer than two ranks reached it),
    the wait it caused, and whether any rank reported the step; folded as timings arrive."""

    def __init__(self, rec: RunRecord) -> None:
        self.rec = rec
        self.last = array("b")
        self.wait = array("d")
        self.seen = bytearray()
        self.thinned = 0  # steps before this one were thinned
        self.stride = KEEP_EVERY  # of the older steps, those at multiples of it stay whole
        self.emptied = 0  # complete steps emptied (each once): still steps the run made
        self.emptied_full = 0  # of those, captured in full on every rank
        self.emptied_differ = 0  # of those, with averages that differed between ranks
        self.first_non_finite: int | None = None  # of those, the first with a NaN/inf average
        self.last_words: dict[int, int] = {}  # rank -> steps begun, by its last word
        self._tallies: dict[int, tuple[int, dict[int, tuple[int, float]]]] = {}  # by first step

    def apply(self, e: Any) -> None:
        if isinstance(e, protocol.LocalGrad | protocol.AveragedGrad):
            self._norms(e)
        if isinstance(e, WatchDropped) and e.steps >= 0:
            self.last_words[e.rank] = e.steps
        if not isinstance(e, protocol.Timing) or not 0 <= e.step < len(self.rec.steps):
            return
        grow = e.step + 1 - len(self.last)
        if grow > 0:
            self.last.extend([-1] * grow)
            self.wait.extend([0.0] * grow)
            self.seen.extend(bytes(grow))
        st = self.rec.steps[e.step]
        self.seen[e.step] = 1 if any(rs.spans for rs in st.ranks.values()) else 0
        found = last_to_arrive(st, self.rec.world_size)
        self.last[e.step], self.wait[e.step] = found if found is not None else (-1, 0.0)
        thin(self.rec, self)

    def _norms(self, e: protocol.LocalGrad | protocol.AveragedGrad) -> None:
        """A rank's gradients arrived: their norms now, one event's tensors at a time (the
        page reads every rank's at once when it first draws the step)."""
        if 0 <= e.step < len(self.rec.steps):
            kind = "local" if isinstance(e, protocol.LocalGrad) else "averaged"
            step_memo.rank_norms(self.rec.steps[e.step], e.rank, kind)

    def stragglers(self, upto: int, first: int = 0) -> dict[int, tuple[int, float]]:
        """rank -> (count, summed wait) over steps first..upto. The page asks every frame
        about the newest step: the complete steps' counts (their last rank no longer
        changes) are kept and extended, so a frame counts the new steps, not the run."""
        frozen = min(upto, self.rec.complete_prefix() - 1)
        done, tally = self._tallies.get(first, (first - 1, {}))
        if done > frozen:  # earlier steps (the page stepped back): counted afresh
            return self._count({}, first, upto)
        tally = self._count(tally, done + 1, frozen)
        self._tallies[first] = (frozen, tally)
        return self._count(tally, frozen + 1, upto)

    def _count(self, base: dict, lo: int, hi: int) -> dict[int, tuple[int, float]]:
        out = dict(base)
        for r, w in zip(self.last[lo : hi + 1], self.wait[lo : hi + 1], strict=True):
            if r >= 0:
                n, total = out.get(r, (0, 0.0))
                out[r] = (n + 1, total + w)
        return out

    def seen_steps(self) -> int:
        return self.seen.count(1)


def history(rec: RunRecord) -> History:
    """The record's history part, folded from its events so far when first asked."""
    part = rec.parts.get(HISTORY)
    if not isinstance(part, History):
        part = History(rec)
        rec.parts[HISTORY] = part
        for e in list(rec.events):
            part.apply(e)
    return part


def thin(rec: RunRecord, part: History) -> None:
    """Empty the steps older than the newest ``KEEP_STEPS`` (but every stride-th),
    once ``CHUNK`` of them wait; never a step the page has not taken in yet (steps past the
    complete prefix, as while a rank hangs, stay whole)."""
    if len(rec.steps) - KEEP_STEPS - part.thinned < CHUNK:
        return  # nothing to do whatever the complete prefix, which is dearer to find
    upto = min(len(rec.steps) - KEEP_STEPS, rec.complete_prefix())
    if upto - part.thinned < CHUNK:
        return
    stride = KEEP_EVERY
    while upto // stride > KEEP_OLD:
        stride *= 2
    if stride != part.stride:  # the steps kept so far at the old stride: half of them go
        part.stride, part.thinned = stride, 0
    emptied = set()
    for st in rec.steps[part.thinned : upto]:
        if st.step % stride and st.ranks:
            if st.complete(rec.world_size):  # what the report counts, kept before it goes
                part.emptied_full += 1
                part.emptied_differ += averages_identical(st) is False
                if part.first_non_finite is None and non_finite_average(st):
                    part.first_non_finite = st.step
            st.ranks = {}
            st.memo.clear()
            emptied.add(st.step)
    part.emptied += len(emptied)
    rec.events = [e for e in rec.events if not (isinstance(e, STEP_EVENTS) and e.step in emptied)]
    part.thinned = upto


def complete_count(rec: RunRecord) -> int:
    """Steps the run made: those whose all-reduce a rank saw finish, and those the record
    emptied (only whole steps, long done, are emptied).

    Not the steps every rank reported. A watched rank's step leaves for ddp-viz when its next
    forward begins (the parameters it reports are the optimizer's), so a rank killed between
    steps (torchrun's SIGTERM, a SIGSEGV) or held before its next forward never sends its last
    ones: a run whose every rank did three steps read "0 step(s)". And a rank that fails sends
    the step it failed in as it ends, all-reduce unfinished: two ranks that did three steps and
    failed in the fourth read "4 step(s)". Every bucket of DDP's all-reduce finishing on one
    rank means every rank joined each of them: that step was made. But no more steps than a
    rank said it began in its last word: a rank out of data under DDP's join() joins the
    others' all-reduces with zeros, training on nothing (uneven inputs: 5 steps, not 7)."""
    part = rec.parts.get(HISTORY)
    if not isinstance(part, History):
        return sum(1 for st in rec.steps if _all_reduced(st))
    made = sum(1 for st in rec.steps if _all_reduced(st)) + part.emptied
    return min([made, *part.last_words.values()])


def _all_reduced(st: StepRecord) -> bool:
    """Whether some rank reported every bucket of this step's all-reduce finished."""
    return any(
        rs.bucket_spans and all(b.get("finished") is not None for b in rs.bucket_spans)
        for rs in st.ranks.values()
    )


def recorded(e: Any) -> bool:
    """Whether the recording keeps ``e``: the run's and the doctor's events always; a step's
    gradients, parameters and timings per ``RECORD_ALL``."""
    if not isinstance(e, STEP_EVENTS) or e.step < RECORD_ALL:
        return True
    stride = 1 << (e.step // RECORD_ALL).bit_length()
    return e.step % stride == 0
