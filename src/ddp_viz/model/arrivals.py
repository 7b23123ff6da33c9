"""When each rank reached the all-reduce, and who the others waited for (pure): read from a
step's bucket launches. Its own module, below the record and the watched run's history that
folds it as timings arrive."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ddp_viz.model.timeline import StepRecord

__all__ = ["arrivals", "last_to_arrive"]


def arrivals(st: StepRecord) -> dict[int, float]:
    """When each rank's first bucket entered the comm hook: it reached the all-reduce."""
    out = {}
    for r, rs in st.ranks.items():
        launched = [b["launched"] for b in rs.bucket_spans if b.get("launched") is not None]
        if launched:
            out[r] = min(launched)
    return out


def last_to_arrive(st: StepRecord, world: int) -> tuple[int, float] | None:
    """The rank that reached the all-reduce last, and how long after the first: everyone
    else waited that long for it. Only once each of the ``world`` ranks has arrived: in a step
    a rank never reached (it crashed or hangs before it) the last of those that came is not
    who the others waited for, and a crashed rank's neighbour was counted a straggler for it."""
    got = arrivals(st)
    if len(got) < max(2, world):
        return None
    last = max(got, key=lambda r: (got[r], r))
    return last, got[last] - min(got.values())
