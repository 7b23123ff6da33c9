"""The ranks the others waited for, put first among the ends (pure): the ranks a monitored
barrier named as not arrived, or the ranks torchrun stopped, silent, while the others timed
out in a collective (see :mod:`.monitored`). Each returns the ends unchanged when its rule
does not hold."""

from __future__ import annotations

from dataclasses import replace

from ddp_viz.kinds.watched import failures as fail
from ddp_viz.kinds.watched import monitored


def named_first(ends: list[fail.RankEnd], named: monitored.Late) -> list[fail.RankEnd]:
    """The ranks a monitored barrier named first, in its order, each with how it ended (a rank
    that raised an error of its own before the barrier gave up is the cause instead)."""
    if any(r.end is fail.End.RAISED and not r.peer_gone for r in ends):
        return ends
    by_rank = {r.rank: r for r in ends}
    # a rank named with no end of its own seen: nothing says how far it got (a lost rank or
    # one that said its last word has an end already), and no line says how it ended
    late = [
        replace(by_rank[r], late=named)
        if r in by_rank
        else fail.RankEnd(r, fail.End.LATE, float("inf"), 0, late=named)
        for r in named.ranks
    ]
    return late + [r for r in ends if r.rank not in named.ranks]


def absent_first(ends: list[fail.RankEnd]) -> list[fail.RankEnd]:
    """The ranks the others timed out waiting for, first (see :class:`monitored.Absent`): when
    a rank timed out, every other rank that raised lost a peer or timed out too, and every
    rank left raised nothing and was stopped by torchrun. A lost connection beside a timeout
    is the timed-out rank's exit, seen by a peer (by the clock it can come first: gloo closes
    the sockets before the error reaches Python). Any other end (a crash, a kill) keeps its
    place, and so do lost connections with no timeout beside them."""
    raised = [r for r in ends if r.end is fail.End.RAISED]
    stopped = [r for r in ends if r.end is fail.End.STOPPED]
    if not raised or not stopped or len(raised) + len(stopped) != len(ends):
        return ends
    errors = [r.failure for r in raised if r.failure is not None]
    timeouts = [f for f in errors if monitored.timed_out(f.message)]
    if len(errors) != len(raised) or not timeouts or not all(r.peer_gone for r in raised):
        return ends
    first = min(timeouts, key=lambda f: (f.at, f.rank))
    # a stopped rank that had begun the step the others timed out in was likely waiting in it
    # too, its error cut short by torchrun: the ones behind are those the others waited for
    behind = [r for r in stopped if r.step < max(f.step for f in timeouts)] or stopped
    absent = monitored.Absent(
        tuple(r.rank for r in behind),
        monitored.waited_ms(timeouts),
        first.site,
        waiting=tuple(sorted(f.rank for f in timeouts)),
    )
    rest = [r for r in stopped if r not in behind]
    return [replace(r, late=absent) for r in behind] + raised + rest
