"""``dist.monitored_barrier``'s own diagnosis, read from the ranks' errors (pure).

On gloo, rank 0's monitored barrier waits ``timeout`` for every other rank and raises naming
the first that did not arrive (``Rank 2 failed to pass monitoredBarrier in 2000 ms``), or with
``wait_all_ranks=True`` every one (``Ranks 2, 3 failed …``). The ranks that did arrive then
raise ``Rank 1 successfully reached monitoredBarrier, but received errors while waiting for
send/recv from rank 0``. Both errors are consequences: the ranks named are the cause, though
they raised nothing (they were still training, or asleep, when torchrun stopped them). The
words are torch 2.13's, from ProcessGroupGloo::monitoredBarrier, checked by a real run.
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
class Late:
    """Ranks ``ranks`` had not arrived when rank ``by``'s monitored barrier at ``site`` had
    waited ``ms`` milliseconds for them."""

    ranks: tuple[int, ...]
    by: int
    ms: int
    site: str

    def who(self) -> str:
        return rank_list(list(self.ranks))

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
            return Late(ranks, f.rank, int(m.group(2)), f.site)
    return None
