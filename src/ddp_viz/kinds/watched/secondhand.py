"""A first failure that is itself a consequence (pure): every rank that raised lost a peer or
timed out, and no rank raised an error of its own, was killed or left.

gloo tells of a rank that never comes to a collective only through the ranks that wait for
it: one times out after the process group's timeout, its exit closes its connections, and
the others raise "Connection reset by peer" or "Connection closed by peer" (by the clock
sometimes before the timeout itself: gloo closes the sockets before the error reaches Python).
A rank held outside the collective (a file lock, a data loader, a checkpoint) raises nothing
until then, and when it is let go it comes late and loses its peers as well. Named the cause,
the first of those errors blamed a rank that had only waited (``file_lock.py`` with
``--hang-after`` past its 4 s timeout: "rank 0 is the root cause" for a connection reset).

So the report says that no rank raised an error of its own, who timed out and who lost a
peer, where the first did, and how to see where each rank was: a hang threshold under the
timeout, which names a rank that stops moving while it still can. When the ranks' bucket
launches show one of them reaching that step's all-reduce only after the timeout had run out,
that rank is the one the others waited for, and it is named.
"""

from __future__ import annotations

from ddp_viz.kinds.watched.doctor import rank_list
from ddp_viz.kinds.watched.events import WatchFailure
from ddp_viz.kinds.watched.failures import End, RankEnd, raised_phrase
from ddp_viz.kinds.watched.monitored import timed_out, waited_ms
from ddp_viz.model.arrivals import last_to_arrive
from ddp_viz.model.timeline import RunRecord


def applies(first: RankEnd, world: int) -> bool:
    """The first of the ends (see :func:`failures.rank_ends`' order) is a lost peer or a
    timeout: then so is every rank's that raised, and no rank was killed or left. Unless the
    others' words name its model as the odd one, or it is a rank the others waited for."""
    return (
        world > 1
        and first.end is End.RAISED
        and first.peer_gone
        and first.late is None
        and not first.model_odd
        and first.failure is not None
    )


def _raised(ends: list[RankEnd]) -> list[WatchFailure]:
    return [r.failure for r in ends if r.failure is not None]  # only a raised end has one


def _timeouts(ends: list[RankEnd]) -> list[WatchFailure]:
    return [f for f in _raised(ends) if timed_out(f.message)]


def came_late(rec: RunRecord, ends: list[RankEnd]) -> tuple[int, int, float, int] | None:
    """The rank that reached the all-reduce of the step the first error came in after the
    others' timeout had run out, if the ranks' bucket launches say so: (rank, step from 1,
    seconds after the first rank, the timeout in ms). Every rank must have reached it, and the
    timeout must be in the words: a rank merely last is no cause."""
    first = ends[0].failure  # the ends of a run whose first is secondhand: never empty
    ms = waited_ms(_timeouts(ends))
    if first is None or first.inside is None or ms <= 0 or not 1 <= first.step <= len(rec.steps):
        return None
    found = last_to_arrive(rec.steps[first.step - 1], rec.world_size)
    if found is None or found[1] * 1000 < ms:
        return None
    return found[0], first.step, found[1], ms


def late_line(rec: RunRecord, ends: list[RankEnd]) -> str | None:
    """The report's crash headline when a rank came late: that rank, the cause, leads; the
    errors it set off follow (the first of them no longer marked: it is not what to read)."""
    late = came_late(rec, ends)
    if late is None:
        return None
    rank, step, after, ms = late
    return (
        f"✗ crash: rank {rank} reached step {step}'s all-reduce {after * 1000:.0f} ms after the "
        f"first rank, past the {ms / 1000:g} s timeout: the others had given up on it, and "
        "each error below followed (the cause)"
    )


def _again(ms: int) -> str:
    if not ms:
        return "a --hang-after, under the process group's timeout,"
    return f"--hang-after {max(1, ms // 2000)}, under the {ms / 1000:g} s timeout,"


def verdict(ends: list[RankEnd], rec: RunRecord) -> str:
    """The report's last line when no rank raised an error of its own."""
    raised, timeouts = _raised(ends), _timeouts(ends)
    ms = waited_ms(timeouts)
    late = came_late(rec, ends)
    if late is not None:
        rank, step, after, _ = late
        return (
            f"ddp-viz verdict: rank {rank} is the root cause: it reached step {step}'s "
            f"all-reduce {after * 1000:.0f} ms after the first rank, past the {ms / 1000:g} s "
            "timeout the others gave up at, and raised no error of its own (run again with "
            f"{_again(ms)} to see where it was held)"
        )
    waited = sorted(f.rank for f in timeouts)
    lost = sorted(f.rank for f in raised if f.rank not in waited)
    said = []
    if waited:
        said.append(f"{rank_list(waited)} timed out")
    if lost:
        their = "its connection" if len(lost) == 1 else "their connections"
        said.append(f"{rank_list(lost)} lost {their} to a peer")
    where = f"the first at {raised[0].site}, {raised_phrase(raised[0])}"
    why = "the peer they lost closed its connections without an error ddp-viz saw"
    if waited:
        why = (
            "the rank they waited for was held outside the collective or came late to it: "
            f"run again with {_again(ms)} to see where each rank was"
        )
    return (
        f"ddp-viz verdict: no rank raised an error of its own: {' and '.join(said)} ({where}); "
        + why
    )
