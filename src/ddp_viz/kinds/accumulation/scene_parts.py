"""The accumulation scene's small parts: how much of it fits, the lines under its table,
which micro-batch columns to draw, and comparing DDP's tensors with a float64 reference."""

from __future__ import annotations

from dataclasses import dataclass

from ddp_viz.model.frame import Font
from ddp_viz.model.tensors import close, is_summary, tensor_norm


@dataclass(frozen=True)
class Plan:
    """How much of the scene fits: caption lines, the rows line, the note's lines."""

    caption: int
    rows: bool
    note: int


PLANS = (Plan(2, True, 3), Plan(1, True, 3), Plan(0, True, 3), Plan(0, False, 2))
MIN_BELOW = 3  # lines the table must leave below it: the count, the verdict, the parameters


@dataclass(frozen=True)
class Paragraph:
    """A line (wrapped) below the table; when space runs out the lowest ``priority`` goes."""

    text: str
    font: Font
    color: str
    priority: int
    key: str = ""
    value: float | None = None
    most: int = 4  # at most this many lines
    # paragraphs of one group are kept or dropped together: a verdict never stays without the
    # two lines it compares
    group: str = ""


def close_in_value(a: dict, b: dict, rel: float = 1e-5) -> bool:
    """DDP's float32 tensors against a float64 reference: by value for lists, by norm and
    absmax for summaries (their digests hash the bytes, which two dtypes never share)."""
    if set(a) != set(b):
        return False
    for name in a:
        x, y = a[name], b[name]
        if is_summary(x) or is_summary(y):
            pairs = [(tensor_norm(x), tensor_norm(y))]
            if is_summary(x) and is_summary(y):
                pairs.append((float(x.get("absmax", 0.0)), float(y.get("absmax", 0.0))))
        else:
            pairs = list(zip(x, y, strict=False)) if len(x) == len(y) else [(1.0, 0.0)]
        if not all(close(p, q, rel) for p, q in pairs):
            return False
    return True


def visible_micro(k: int, fit: int) -> list[int | None]:
    """Which micro-batch columns to draw when only ``fit`` fit: the first ones, a gap (None)
    and the last, which is the one that synchronises."""
    if k <= fit:
        return list(range(k))
    head = max(1, fit - 2)
    return [*range(head), None, k - 1]
