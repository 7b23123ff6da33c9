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
timeout, which names a rank that stops moving while it still can.
"""

from __future__ import annotations

from ddp_viz.kinds.watched.doctor import rank_list
from ddp_viz.kinds.watched.failures import End, RankEnd, raised_phrase
from ddp_viz.kinds.watched.monitored import timed_out, waited_ms


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


def verdict(ends: list[RankEnd]) -> str:
    """The report's last line when no rank raised an error of its own."""
    raised = [r.failure for r in ends if r.end is End.RAISED and r.failure is not None]
    timeouts = [f for f in raised if timed_out(f.message)]
    waited = sorted(f.rank for f in timeouts)
    lost = sorted(f.rank for f in raised if f.rank not in waited)
    said = []
    if waited:
        said.append(f"{rank_list(waited)} timed out")
    if lost:
        their = "its connection" if len(lost) == 1 else "their connections"
        said.append(f"{rank_list(lost)} lost {their} to a peer")
    first = raised[0]
    where = f"the first at {first.site}, {raised_phrase(first)}"
    if not waited:
        why = "the peer they lost closed its connections without an error ddp-viz saw"
    else:
        ms = waited_ms(timeouts)
        under = f"--hang-after {max(1, ms // 2000)}" if ms else "a --hang-after"
        timeout = f"the {ms / 1000:g} s timeout" if ms else "the process group's timeout"
        why = (
            "the rank they waited for was held outside the collective or came late to it: "
            f"run again with {under}, under {timeout}, to see where each rank was"
        )
    return (
        f"ddp-viz verdict: no rank raised an error of its own: {' and '.join(said)} ({where}); "
        + why
    )
