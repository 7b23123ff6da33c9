"""Ranks that went apart (pure): an uneven end (a rank entered a step after another finished
its loop) and collectives that do not match, read from where the ranks were when they failed,
vanished or hung.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddp_viz.kinds.watched.events import (
    P2P_OPS,
    TO_ROOT,
    CommCall,
    WatchFailure,
    WatchRankLost,
)
from ddp_viz.kinds.watched.tensors import tensor_words, tensors_key

UNEVEN_LESSON = "uneven-inputs"  # the course's lesson on it (opened from the diagnosis)


# --- uneven ends ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Uneven:
    """Rank ``rank`` entered step ``entered`` (from 1) after rank ``done_rank`` finished its
    loop of ``done`` steps."""

    rank: int
    entered: int
    done_rank: int
    done: int
    # where the done rank waits, when only a hang saw it there (no last word): a barrier after
    # its loop, or one inside it that the others never make; nothing tells the two apart
    barrier: CommCall | None = None

    def text(self) -> str:
        fix = (
            f"the ranks had different numbers of batches (lesson: {UNEVEN_LESSON}; fix: the "
            "same number of batches per rank, e.g. a DistributedSampler, which pads or trims "
            "every rank's share to one length, or DDP's join() context manager)"
        )
        if self.barrier is None:  # its last word: its loop ended, by its data or its code
            early = f"or rank {self.done_rank} left its loop early (a break, a return, sys.exit)"
            return f"✗ uneven inputs: {self.headline()}: {fix}, {early}"
        return (
            f"✗ uneven inputs, or a collective only one rank makes: {self.headline()}. If rank "
            f"{self.done_rank} makes that call after its loop, {fix}; if it makes it inside "
            "its loop, the others never do: that call is the bug"
        )

    def headline(self) -> str:
        """Who entered which step while the other was done, in the verdict's words."""
        if self.barrier is None:
            return (
                f"rank {self.rank} entered step {self.entered} after rank {self.done_rank} "
                f"finished {self.done} steps"
            )
        c = self.barrier
        return (
            f"rank {self.rank} entered step {self.entered} while rank {self.done_rank}, after "
            f"{self.done} steps, waits in {c['op']} #{c['seq']} at {c['site']}"
        )


def uneven_end(finished: dict[int, int], entered: dict[int, int]) -> Uneven | None:
    """A rank that entered a step after another finished its loop with fewer steps:
    ``finished`` rank -> steps it began in all (it ended); ``entered`` rank -> the step it
    was in (steps begun) when it failed or hung inside DDP's all-reduce."""
    if not finished or not entered:
        return None
    done_rank = min(finished, key=lambda r: (finished[r], r))
    done = finished[done_rank]
    late = [r for r, s in entered.items() if s > done and r != done_rank]
    if not late:
        return None
    r = max(late, key=lambda x: (entered[x], -x))
    return Uneven(r, entered[r], done_rank, done)


# --- collectives that did not match, read from where the ranks were when they went -----------
def _key(c: CommCall) -> tuple:
    return c["op"], "bucket" in c, tensors_key(c), c.get("root")


def call_words(rank: int, c: CommCall) -> str:
    sizes = tensor_words(c)
    ddp = "DDP's gradient " if "bucket" in c else ""
    root = c.get("root", -1)  # -1: a root that was no rank number
    rooted = f" ({'to' if c['op'] in TO_ROOT else 'from'} rank {root})" if root >= 0 else ""
    said = f"rank {rank} {ddp}{c['op']} #{c['seq']} {sizes}{rooted} at {c['site']}"
    return said.replace("  ", " ")


def call_mismatch(
    failures: list[WatchFailure], lost: list[WatchRankLost]
) -> tuple[str, int | None] | None:
    """The ranks' collectives of one sequence number that differ (op, DDP's or the script's,
    sizes, root) as the ranks failed or went, in words, and the odd rank out (one rank's call
    against the same call on all the others; None when no rank is alone)."""
    calls: dict[int, CommCall] = {}
    for e in lost:
        c = e.inside or e.last
        if c is not None:
            calls[e.rank] = c
    for f in failures:
        if f.inside is not None:
            calls[f.rank] = f.inside
    # a point-to-point call is numbered apart and made by two ranks only, a subgroup's by its
    # ranks only (numbered apart per group): neither matches a call of every rank's
    calls = {r: c for r, c in calls.items() if c["op"] not in P2P_OPS and not c.get("group")}
    by_seq: dict[int, dict[int, CommCall]] = {}
    for r, c in calls.items():
        by_seq.setdefault(c["seq"], {})[r] = c
    for _, group in sorted(by_seq.items()):
        keys: dict[tuple, list[int]] = {}
        for r, c in sorted(group.items()):
            keys.setdefault(_key(c), []).append(r)
        if len(keys) < 2:
            continue
        said = "; ".join(call_words(r, c) for r, c in sorted(group.items()))
        alone = [rs[0] for rs in keys.values() if len(rs) == 1]
        odd = alone[0] if len(alone) == 1 else None  # of two ranks that differ, both are
        if odd is None and len(group) == 2:  # two ranks: the script's own call is the odd one
            mine = [r for r, c in group.items() if "bucket" not in c]
            odd = mine[0] if len(mine) == 1 else None
        return f"✗ the ranks' collectives do not match: {said}", odd
    return None
