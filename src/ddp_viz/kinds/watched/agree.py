"""Whether a watched step's averaged gradients are the same on every rank, compared bit for
bit, and whether they are finite (pure): the report's, the page's and the history's answer."""

from __future__ import annotations

import math

from ddp_viz.model.tensors import is_summary
from ddp_viz.model.timeline import StepRecord


def averages_identical(st: StepRecord) -> bool | None:
    """Bit for bit on every rank: lists compared value by value, summaries by their digest
    (once per step's values: the page asks on every frame)."""
    return st.memoized("averages_identical", lambda: _averages_identical(st))


def _averages_identical(st: StepRecord) -> bool | None:
    avgs = [rs.averaged for rs in st.ranks.values()]
    if not avgs or any(a is None for a in avgs):
        return None
    first = avgs[0]
    # ranks whose averages are equal dicts (compared at C speed: 198 tensors on 8 ranks took a
    # frame's worth of Python pair by pair) agree when every summary carries its digest
    digests = all(v.get("digest") is not None for v in first.values() if is_summary(v))
    for other in avgs[1:]:
        if digests and other == first:
            continue
        if set(other) != set(first):
            return False
        for name, value in first.items():
            theirs = other[name]
            if is_summary(value) or is_summary(theirs):
                if not (is_summary(value) and is_summary(theirs)):
                    return False
                if value.get("digest") is None or value.get("digest") != theirs.get("digest"):
                    return False
            elif not same_values(value, theirs):
                return False
    return True


def same_values(a: list[float], b: list[float]) -> bool:
    """Two lists of values equal value by value, a NaN equal to a NaN at the same place:
    ranks that all hold NaN after an overflow hold identical averages, not different ones
    (the events carry no NaN payload bits; a summary's digest compares the bytes)."""
    if a == b:
        return True
    return len(a) == len(b) and all(
        x == y or (x != x and y != y) for x, y in zip(a, b, strict=True)
    )


def non_finite_average(st: StepRecord) -> bool:
    """Whether any rank's averaged gradient at this step holds a NaN or an infinity."""
    for rs in st.ranks.values():
        for v in (rs.averaged or {}).values():
            norm = float(v.get("norm", 0.0)) if is_summary(v) else 0.0
            if not math.isfinite(norm if is_summary(v) else sum(v)):
                return True
    return False
