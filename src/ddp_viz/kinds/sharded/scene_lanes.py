"""The sharded scene's timeline: a lane per rank with every collective of the phase from its
start to its end, on an axis of milliseconds since the way's step began.

Each bar is labelled with its number in the rank's step (the table's ``#n``), its op and what
it moves (``#5 AG hidden``, ``#3 bcast inp.weight``), shortened to fit the bar; with room, a
second line gives its bytes and duration. Calls that ran at the same time on a rank (ZeRO's
asynchronous broadcasts) are drawn in sub-rows of its lane, so each one shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddp_viz.kinds.sharded.events import ShardedCollective
from ddp_viz.kinds.sharded.model import WAYS, Way
from ddp_viz.model.frame import Align, Rect

if TYPE_CHECKING:
    from ddp_viz.kinds.sharded.scene import ShardedBuilder

OP_INK = {"all_gather": "accent", "reduce_scatter": "bad", "all_reduce": "ok", "broadcast": "text"}
OPS = {"all_reduce": "AR", "broadcast": "bcast", "all_gather": "AG", "reduce_scatter": "RS"}
LANE_MOST = 5.0  # a lane's sub-row is at most this many text lines tall
Calls = dict[int, list[ShardedCollective]]  # rank → its calls of the phase, in issue order


def human(n: float) -> str:
    if n >= 1e4:
        return f"{n / 1e3:.1f} kB"
    return f"{n:,.0f} B"


def busiest_way(b: ShardedBuilder, step: int) -> tuple[Way, Calls]:
    """The way with the most collectives in this phase, and each rank's calls of it."""
    best, calls = Way.FSDP, {}
    for way in WAYS:
        mine = {
            r: [c for c in b.part.calls(way.value, step, r) if c.phase == b.phase_word]
            for r in range(b.world)
        }
        if sum(len(v) for v in mine.values()) > sum(len(v) for v in calls.values()):
            best, calls = way, mine
    return best, calls


def sub_rows(calls: list[ShardedCollective]) -> list[int]:
    """Each call's sub-row: the first whose last call had ended when it started."""
    ends: list[float] = []
    out = []
    for c in calls:
        k = next((i for i, e in enumerate(ends) if e <= c.start + 1e-9), len(ends))
        if k == len(ends):
            ends.append(c.end)
        else:
            ends[k] = c.end
        out.append(k)
    return out


def lanes_need(b: ShardedBuilder) -> float:
    """The least height the lanes take with a rank label on every lane."""
    return b.lh * 1.2 + b.world * b.text_h + axis_height(b)


def axis_height(b: ShardedBuilder) -> float:
    return b.small.px * 0.7 + b.text_h


def fit_unit(room: float, counts: list[int], floor: float, most: float) -> float:
    """The tallest sub-row (at most ``most``) such that lanes of ``max(floor, n · unit)``
    fill no more than ``room``; 0 when even ``floor`` a lane does not fit."""
    if floor * len(counts) > room:
        return 0.0
    lo, hi = 0.0, most
    for _ in range(40):
        mid = (lo + hi) / 2
        if sum(max(floor, n * mid) for n in counts) <= room:
            lo = mid
        else:
            hi = mid
    return lo


def draw_lanes(b: ShardedBuilder, area: Rect, step: int) -> None:
    """A lane per rank for the busiest way of the phase, then the time axis."""
    f, lh, t = b.small, b.lh, b.t
    way, calls = busiest_way(b, step)
    if not any(calls.values()):
        return
    draw_heading(b, area, way, sorted({c.op for v in calls.values() for c in v}))
    rows = {r: sub_rows(v) for r, v in calls.items()}
    counts = [max(rows.get(r, []), default=0) + 1 for r in range(b.world)]
    top = area.y + lh * 1.2
    room = area.bottom - top - axis_height(b)
    unit = fit_unit(room, counts, b.text_h, b.text_h * LANE_MOST)
    # sub-rows too thin for a bar's label (ZeRO's broadcasts at 8 ranks): each rank's calls
    # share one row, every lane as tall as the others, each bar see-through so where calls
    # overlap shows darker, and the lane says how many calls of which op it holds
    merged = max(counts) > 1 and unit < b.text_h
    overlapping = [n > 1 for n in counts]  # a lane whose calls ran one after another keeps
    if merged:  # its labels inside its bars
        rows = {r: [0] * len(v) for r, v in calls.items()}
        counts = [1] * b.world
        unit = fit_unit(room, counts, b.text_h, b.text_h * LANE_MOST)
    labels = unit > 0
    if not labels:  # no room for a label a lane: thinner lanes, unlabelled
        unit = room / max(1, sum(counts))
        if unit < 2:
            return
    heights = [max(b.text_h if labels else 0.0, n * unit) for n in counts]
    label_w = max(b.width("r8", f), b.width("ms", f)) + f.px * 0.4 if labels else 0.0
    t0 = min(c.start for v in calls.values() for c in v)
    t1 = max(c.end for v in calls.values() for c in v)
    x0 = area.x + label_w
    span = Span(x0, area.right - x0 - b.width("8888", f) / 2, t0, max(t1, t0 + 1e-6))
    right = area.right + b.pad * 0.5  # words end here (the step's table may be beside)
    y = top
    for rank, h in enumerate(heights):
        if labels:
            b.text(area.x, y + (h - b.text_h) / 2, f"r{rank}", f, t.rank_color(rank))
        mine = calls.get(rank, [])
        shown = mine[: round(b.progress * len(mine) + 0.499)]
        sub = h / counts[rank]
        see_through = merged and overlapping[rank]
        for c, k in zip(shown, rows[rank], strict=False):
            draw_bar(b, span, Rect(span.x, y + k * sub, span.w, sub), c, see_through)
        if see_through and shown and labels:
            lane_label(b, span, Rect(span.x, y, span.w, h), shown, right)
        b.shape(kind="line", points=((x0, y + h), (span.right, y + h)), stroke=t.grid)
        y += h
    draw_axis(b, span, y + f.px * 0.2, labels, right)


def draw_heading(b: ShardedBuilder, area: Rect, way: Way, ops: list[str]) -> None:
    """What the lanes show, and the ops' colours at the right when they fit beside it."""
    f, t = b.small, b.t
    heads = [
        f"{way.label}, every rank: each collective from start to end",
        f"{way.label}, every rank",
        way.label,
    ]
    words = [op.replace("_", "-") for op in ops]
    legend_w = sum(b.width(w, f) + f.px for w in words)
    head = next((h for h in heads if b.width(h, f) + legend_w <= area.w), "")
    if not head:
        head, legend_w = next((h for h in heads if b.width(h, f) <= area.w), ""), 0.0
    if head:
        b.text(area.x, area.y, head, f, t.muted, key="lanes.title")
    if legend_w:
        x = area.right - legend_w + f.px
        for op, word in zip(ops, words, strict=True):
            b.text(x, area.y, word, f, getattr(t, OP_INK[op]), key=f"legend.{op}")
            x += b.width(word, f) + f.px


class Span:
    """Where the phase's time ``t0``…``t1`` (seconds) lies on the stage: ``x``…``x + w``."""

    def __init__(self, x: float, w: float, t0: float, t1: float) -> None:
        self.x, self.w, self.t0, self.t1 = x, w, t0, t1

    @property
    def right(self) -> float:
        return self.x + self.w

    def at(self, t: float) -> float:
        return self.x + self.w * (t - self.t0) / (self.t1 - self.t0)


def draw_bar(
    b: ShardedBuilder, span: Span, row: Rect, c: ShardedCollective, merged: bool = False
) -> None:
    """One collective in its sub-row, and its label inside the bar when one fits (in a
    merged lane: see-through, with the lane's label instead, :func:`lane_label`)."""
    left = span.at(c.start)
    w = max(2.0, span.at(c.end) - left)
    inset = max(1.0, row.h * 0.15 if merged else row.h * 0.08)
    box = Rect(left, row.y + inset, w, row.h - 2 * inset)
    ink = getattr(b.t, OP_INK[c.op])
    alpha = 70 if merged else 255
    b.shape(
        kind="rect",
        box=box,
        fill=ink,
        fill_alpha=alpha,
        stroke=ink if merged else "",
        key=f"lane.{c.rank}.{c.seq}",
    )
    f, th = b.small, b.text_h
    if row.h < th or merged:
        return
    room = w - f.px * 0.5
    two = row.h >= th * 2.1
    first = next((x for x in bar_texts(c) if b.width(x, f) <= room), "")
    if not first:
        return
    second = ""
    if two:
        size = human(max(c.bytes_in, c.bytes_out))
        tries = [f"{size} · {(c.end - c.start) * 1e3:.1f} ms", size]
        second = next((x for x in tries if b.width(x, f) <= room), "")
    lines = [first, second] if second else [first]
    y = row.cy - th * len(lines) / 2
    for i, text in enumerate(lines):
        key = f"bar.{c.rank}.{c.seq}.{i}"
        b.text(left + f.px * 0.25, y + i * th, text, f, b.t.panel, key=key)


def lane_label(
    b: ShardedBuilder, span: Span, lane: Rect, calls: list[ShardedCollective], right: float
) -> None:
    """A merged lane's words, after its last bar when they fit there, else before its first:
    how many calls of which op, with their first and last numbers (``6 × bcast (#2–7)``)."""
    f = b.small
    ops = sorted({OPS[c.op] for c in calls})
    n = f"#{calls[0].seq + 1}–{calls[-1].seq + 1}" if len(calls) > 1 else f"#{calls[0].seq + 1}"
    texts = [f"{len(calls)} × {'/'.join(ops)} ({n})", f"{len(calls)} × {'/'.join(ops)}"]
    end = max(span.at(c.end) for c in calls) + f.px * 0.3
    start = min(span.at(c.start) for c in calls) - f.px * 0.3
    y = lane.cy - b.text_h / 2
    for text in texts:
        w = b.width(text, f)
        if end + w <= right:
            b.text(end, y, text, f, b.t.text, key=f"lane.label.{calls[0].rank}")
            return
        if start - w >= span.x:
            b.text(start, y, text, f, b.t.text, Align.RIGHT, key=f"lane.label.{calls[0].rank}")
            return


def bar_texts(c: ShardedCollective) -> list[str]:
    """A bar's label, longest first: number, op and what it moves."""
    n, op = f"#{c.seq + 1}", OPS[c.op]
    if c.op == "broadcast" and c.tensors:
        what = c.tensors[0]
        short = what.replace(".weight", ".w").replace(".bias", ".b")
    else:
        what = c.layer or "bucket"
        short = what[:3]
    return [f"{n} {op} {what}", f"{n} {op} {short}", f"{n} {op}", n]


def draw_axis(b: ShardedBuilder, span: Span, y: float, unit_label: bool, right: float) -> None:
    """The time axis under the lanes: ticks every 1, 2 or 5 × 10^k ms, labels that fit."""
    f, t = b.small, b.t
    b.shape(kind="line", points=((span.x, y), (span.right, y)), stroke=t.muted)
    lo, hi = span.t0 * 1e3, span.t1 * 1e3
    widest = b.width(f"{hi:.0f}", f) + f.px * 1.5
    step = nice_step(hi - lo, span.w, widest)
    last = span.x - f.px * 0.2
    if unit_label:
        last = b.text(span.x - f.px * 0.4, y + f.px * 0.4, "ms", f, t.muted, Align.RIGHT).box.right
    k = int(lo // step) + 1 if lo % step else int(lo // step)
    while k * step <= hi + 1e-9:
        v = round(k * step, 6)
        x = span.at(v / 1e3)
        b.shape(kind="line", points=((x, y), (x, y + f.px * 0.35)), stroke=t.muted)
        text = f"{v:g}"
        w = b.width(text, f)
        if x - w / 2 >= last + f.px * 0.5 and x + w / 2 <= right:
            last = b.text(x, y + f.px * 0.4, text, f, t.muted, Align.CENTER, key="axis").box.right
        k += 1


def nice_step(span_ms: float, width: float, label_w: float) -> float:
    """The smallest of 1, 2, 5 × 10^k ms whose ticks lie at least ``label_w`` apart."""
    step = 1e-3
    while True:
        for m in (1, 2, 5):
            if width * m * step / max(span_ms, 1e-9) >= label_w:
                return m * step
        step *= 10
