"""``dist.monitored_barrier``'s own diagnosis, read from the ranks' errors (pure).

On gloo, rank 0's monitored barrier waits ``timeout`` for every other rank and raises naming
the first that did not arrive (``Rank 2 failed to pass monitoredBarrier in 2000 ms``), or with
``wait_all_ranks=True`` every one (``Ranks 2, 3 failed …``). The ranks that did arrive then
raise ``Rank 1 successfully reached monitoredBarrier, but received errors while waiting for
send/recv from rank 0``. Both errors are consequences: the ranks named are the cause, though
they raised nothing (they were still training, or asleep, when torchrun stopped them). The
words are torch 2.13's, from ProcessGroupGloo::monitoredBarrier, checked by a real run.

Without a monitored barrier the ranks' own errors can still say who had not arrived: when
every error raised is a collective's timeout (gloo's "Timed out waiting 30000ms for recv
operation to complete", the store's "wait timeout") and the other ranks raised nothing and
were still running when torchrun stopped them, the ranks that timed out waited for those
(:class:`Absent`). A rank that had arrived in the same collective would have timed out too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ddp_viz.kinds.watched.doctor import rank_list
from ddp_viz.kinds.watched.events import WatchFailure

_MISSING = re.compile(r"Ranks? (\d+(?:, \d+)*) failed to pass monitoredBarrier in (\d+) ms")
# the errors a monitored barrier raises, its own or its arrived ranks': never a cause alone
WORDS = re.compile(
    r"failed to pass monitoredBarrier|successfully reached monitoredBarrier", re.IGNORECASE
)


@dataclass(frozen=True)
class NotArrived:
    """Ranks ``ranks`` had not arrived at ``site`` when others had waited ``ms`` milliseconds
    for them (0: the errors do not say how long)."""

    ranks: tuple[int, ...]
    ms: int
    site: str

    def who(self) -> str:
        return rank_list(list(self.ranks))


@dataclass(frozen=True)
class Late(NotArrived):
    """Named by rank ``by``'s monitored barrier, which waited ``ms`` for them."""

    by: int

    @staticmethod
    def place() -> str:
        return "the monitored barrier"

    def words(self) -> str:
        """What the barrier said, for the report's cause line and the verdict."""
        them = "it" if len(self.ranks) == 1 else "them"
        return (
            f"rank {self.by}'s dist.monitored_barrier at {self.site} waited {self.ms} ms for "
            f"{them} and named {them}"
        )


def late(failures: list[WatchFailure]) -> Late | None:
    """The ranks the earliest monitored barrier's error names as not arrived, if any did."""
    for f in sorted(failures, key=lambda f: (f.at, f.rank)):
        m = _MISSING.search(f.message)
        if m is not None:
            ranks = tuple(int(r) for r in m.group(1).split(", "))
            return Late(ranks, int(m.group(2)), f.site, by=f.rank)
    return None


_WAITED_MS = re.compile(r"timed out waiting (\d+) ?ms|timeout after (\d+) ?ms", re.IGNORECASE)
_TIMEOUT = re.compile(r"timed out|timeout", re.IGNORECASE)
_GONE = re.compile(r"closed|reset|broken pipe|refused|aborted", re.IGNORECASE)


def timed_out(message: str) -> bool:
    """A collective's (or the store's) timeout: the peer never came, which is not a peer gone
    (its connection closed, reset or refused)."""
    return bool(_TIMEOUT.search(message)) and not _GONE.search(message)


@dataclass(frozen=True)
class Absent(NotArrived):
    """They raised nothing and were still running when torchrun stopped them, while ranks
    ``waiting`` timed out in a collective at ``site``: the ranks those waited for (at least one
    of them, when there are several)."""

    waiting: tuple[int, ...]

    @staticmethod
    def place() -> str:
        return "the collective the others timed out in"

    def words(self) -> str:
        """What the others' timeouts say, for the report's cause line and the verdict."""
        one = len(self.ranks) == 1
        them = "it" if one else "at least one of them"
        waited = f" {self.ms} ms" if self.ms else ""
        still = "it raised nothing and was" if one else "they raised nothing and were"
        return (
            f"{rank_list(list(self.waiting))} waited{waited} for {them} at {self.site} and "
            f"timed out; {still} still running when torchrun stopped {'it' if one else 'them'}"
        )


def waited_ms(failures: list[WatchFailure]) -> int:
    """The longest wait the timeouts' words give, in ms (0 when none says)."""
    found = [_WAITED_MS.search(f.message) for f in failures]
    return max((int(m.group(1) or m.group(2)) for m in found if m is not None), default=0)
