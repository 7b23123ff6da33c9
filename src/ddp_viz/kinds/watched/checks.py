"""What the watch doctor found in a watched run, read from its record (pure): hangs, ranks
that vanished, the first non-finite loss or gradient, the first step whose parameters or
buffers differ between ranks, and the straggler verdict. The ``--no-window`` report and the
watched page say the same words (:func:`findings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddp_viz.kinds.watched.doctor import hang_lines, lost_text
from ddp_viz.kinds.watched.events import (
    WatchDigests,
    WatchHang,
    WatchNonFinite,
    WatchRankLost,
)
from ddp_viz.kinds.watched.steps import stragglers_with_waits, typical_step_s
from ddp_viz.model.event_base import Event
from ddp_viz.model.timeline import RunRecord

PART = "watched.doctor"  # the record's part that folds them
MAX_NAMES = 6  # tensors named in one line; the rest are counted
# A straggler: last to the all-reduce in at least STRAGGLER_SHARE of at least MIN_STEPS steps
# (the first left out), the others waiting for it on average at least STRAGGLER_S and at least
# STRAGGLER_OF_STEP of a typical step. Someone is always last: a rank last half the time by
# 0.1 ms is noise. Eight ranks on two cores take turns on them, and one of them came out last
# in 3 of 5 steps by 174 ms of second-long steps by chance alone; in 8 steps, being last in 5
# by chance is a 1-in-100 event at 8 ranks (binomial, p = 1/8, over all 8 ranks), and a wait
# under a tenth of a step is within what the machine's scheduling moves a step by.
STRAGGLER_SHARE = 0.6
STRAGGLER_S = 0.002
STRAGGLER_OF_STEP = 0.1
MIN_STEPS = 8
SAY_FROM = 4  # steps with a last rank before the page says anything (too few to tell: said)


@dataclass(frozen=True)
class Desync:
    """The first step whose state differs between ranks, and the tensors that do."""

    step: int  # the step the ranks entered with it (after step ``step - 1``)
    tensors: dict[str, list[int]]  # name -> the ranks whose digest is not rank 0's
    agreed: int | None  # the last step compared before, where every rank agreed


@dataclass
class Doctoring:
    """The doctor's events, folded as they arrive (a part of the record)."""

    world: int = 0
    hangs: list[WatchHang] = field(default_factory=list)
    lost: list[WatchRankLost] = field(default_factory=list)
    non_finite: list[WatchNonFinite] = field(default_factory=list)
    digests: dict[int, dict[int, dict[str, str]]] = field(default_factory=dict)  # step, rank
    desync: Desync | None = None
    agreed: int | None = None

    def apply(self, e: Event) -> None:
        if isinstance(e, WatchHang):
            self.hangs.append(e)
        elif isinstance(e, WatchRankLost):
            self.lost.append(e)
        elif isinstance(e, WatchNonFinite):
            self.non_finite.append(e)
        elif isinstance(e, WatchDigests) and self.desync is None:
            got = self.digests.setdefault(e.step, {})
            got[e.rank] = e.digests
            if self.world and len(got) == self.world:
                self._compare(e.step, self.digests.pop(e.step))

    def _compare(self, step: int, by_rank: dict[int, dict[str, str]]) -> None:
        first = by_rank[min(by_rank)]
        differ: dict[str, list[int]] = {}
        for r, theirs in sorted(by_rank.items()):
            for name in sorted(set(first) | set(theirs)):
                if theirs.get(name) != first.get(name):
                    differ.setdefault(name, []).append(r)
        if not differ:
            self.agreed = step if self.agreed is None else max(self.agreed, step)
            return
        self.desync = Desync(step, differ, self.agreed)
        self.digests.clear()  # the first is what matters; nothing more to hold


def doctoring(rec: RunRecord) -> Doctoring:
    part = rec.parts.get(PART)
    if not isinstance(part, Doctoring):  # first asked: read what came so far, then fold the rest
        part = Doctoring(rec.world_size)
        for e in rec.events:
            part.apply(e)
        rec.parts[PART] = part
    return part


# --- in words ---------------------------------------------------------------------------------
def _names(names: list[str]) -> str:
    more = len(names) - MAX_NAMES
    return ", ".join(names[:MAX_NAMES]) + (f" and {more} more" if more > 0 else "")


def non_finite_text(e: WatchNonFinite) -> str:
    parts = []
    if e.loss is not None:
        parts.append(f"its loss was {e.loss}")
    if e.tensors:
        parts.append(f"its local gradient was not finite in {_names(e.tensors)}")
    return f"✗ non-finite: at step {e.step + 1} on rank {e.rank} (the first), " + "; ".join(parts)


def desync_text(d: Desync) -> str:
    ranks = sorted({r for rs in d.tensors.values() for r in rs})
    who = ", ".join(f"rank {r}" for r in ranks)
    before = f"; identical entering step {d.agreed + 1}" if d.agreed is not None else ""
    return (
        f"✗ desync: entering step {d.step + 1} (after step {d.step}), {who} held other bytes "
        f"than rank 0 in {_names(sorted(d.tensors))}{before}"
    )


def straggler_text(rec: RunRecord) -> str | None:
    """Who the others waited for at the all-reduce, how often and how long; a straggler if
    that rank was last consistently over enough steps by more than noise (see above)."""
    upto = len(rec.steps) - 1
    found = stragglers_with_waits(rec, upto, first=1)  # step 1: one-off costs
    steps = sum(s.count for s in found)
    if steps < SAY_FROM:
        return None
    top = found[0]
    said = (
        f"rank {top.rank} was the last to reach the all-reduce in {top.count} of {steps} "
        f"steps; the others waited {top.mean_wait_s * 1e3:.1f} ms for it on average "
        f"({top.count * top.mean_wait_s:.2f} s in all)"
    )
    step_s = typical_step_s(rec, upto)
    floor = max(STRAGGLER_S, STRAGGLER_OF_STEP * step_s) if step_s else STRAGGLER_S
    if steps < MIN_STEPS:
        return f"no straggler yet: {said}; {MIN_STEPS} steps tell a straggler from noise"
    if top.count / steps < STRAGGLER_SHARE:
        return f"no straggler: {said}, in under {STRAGGLER_SHARE:.0%} of the steps: noise"
    if top.mean_wait_s < floor:
        why = "2 ms" if floor == STRAGGLER_S else f"a tenth of a step ({step_s * 1e3:.1f} ms)"
        return f"no straggler: {said}, under {why}: noise"
    return f"✗ straggler: {said}"


def findings(rec: RunRecord, stacks: bool = True) -> list[tuple[str, list[str]]]:
    """Everything the doctor found so far, each with a key (the report prints each once)."""
    d = doctoring(rec)
    out: list[tuple[str, list[str]]] = []
    for i, h in enumerate(d.hangs):
        out.append((f"hang{i}", hang_lines(h, stacks)))
    for e in d.lost:
        out.append((f"lost{e.rank}", [lost_text(e)]))
    if d.non_finite:
        first = min(d.non_finite, key=lambda e: (e.step, e.rank))
        out.append(("non_finite", [non_finite_text(first)]))
    if d.desync is not None:
        out.append(("desync", [desync_text(d.desync)]))
    return out
