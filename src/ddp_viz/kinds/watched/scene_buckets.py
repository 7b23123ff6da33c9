"""The watched page's buckets: one row per bucket (its index, size and tensor count), each
rank's all-reduce of it on one time axis, and its own duration beside how long the first rank
waited for the last. Faint: a rank waiting for the last to launch the bucket; solid: the
all-reduce itself. Every number is a recorded one."""

from __future__ import annotations

import math
from typing import Protocol

from ddp_viz.kinds.watched.steps import BucketTime, bucket_times, size_text
from ddp_viz.model.frame import Align, Font, Rect
from ddp_viz.model.scenes.base import StepFrameBuilder

MIN_CHART_PX = 80.0  # narrower than this, the bars say nothing: the rows keep their numbers


class PageBuilder(Protocol):  # the watched page's builder, as the buckets use it
    lh: float
    room: float

    def para(self, y: float, text: str, color: str, key: str = "") -> float: ...


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def nice_step(span_ms: float, ticks: int = 4) -> float:
    """A round tick spacing (1, 2 or 5 × 10^k ms) giving about ``ticks`` ticks over the span."""
    raw = max(span_ms, 1e-3) / ticks
    base = 10 ** math.floor(math.log10(raw))
    return next(m * base for m in (1, 2, 5, 10) if m * base >= raw)


class BucketRows:
    """Draws the buckets of the builder's step from ``top``; returns where it ended."""

    def __init__(
        self, b: StepFrameBuilder, page: PageBuilder, max_rows: int, reserve: float = 0.0
    ) -> None:
        """``reserve``: the height to leave below (what the page shows after the buckets)."""
        self.b, self.page, self.max_rows, self.reserve = b, page, max_rows, reserve
        self.f: Font = b.small  # type: ignore[attr-defined]

    def draw(self, top: float) -> float:
        b, st = self.b, self.b.step  # type: ignore[attr-defined]
        buckets = bucket_times(st) if st is not None else []
        lh = self.page.lh
        t = b.t
        if not buckets:
            return top
        if top + lh * 4 + self.reserve > b.ctx.height:  # no room for rows: say where they are
            says = f"{len(buckets)} bucket(s) this step: see the Run tab (Ctrl+T)"
            return self.page.para(top, says, t.muted, "buckets.more")
        y = self.page.para(
            top,
            "buckets on one clock · faint: waiting for the last rank · solid: all-reduce",
            t.muted,
            "buckets.caption",
        )
        heads = ["bucket", "size", "tensors", "all-reduce", "waited"]
        cells = [
            [f"#{bt.index}", size_text(bt.bytes), str(len(bt.params)), ms(bt.own_s),
             ms(bt.waited_s)]
            for bt in buckets
        ]  # fmt: skip
        f = self.f
        widths = [max(b.width(row[i], f) for row in [heads, *cells]) + f.px * 0.8 for i in
                  range(len(heads))]  # fmt: skip
        # a narrow stage: the tensor count, then the size, go before a column is cut; the
        # bucket, its all-reduce and how long the first rank waited stay
        for keep in ([0, 1, 2, 3, 4], [0, 1, 3, 4], [0, 3, 4]):
            if sum(widths[i] for i in keep) + f.px <= self.page.room:
                break
        heads, widths = [heads[i] for i in keep], [widths[i] for i in keep]
        cells = [[row[i] for i in keep] for row in cells]
        self.keep = keep  # the cells keep their column's key: ``bucket3.4`` is its wait
        self.split = len(keep) - 2  # the chart sits before the last two columns
        left_w, right_w = sum(widths[: self.split]), sum(widths[self.split :])
        chart = self.page.room - left_w - right_w - f.px
        x0 = b.pad + left_w
        # the heads, the axis and the "more" line, and what comes after the buckets
        room_rows = int((b.ctx.height - self.reserve - y - lh * 3.2) // lh)
        if room_rows >= len(buckets) - 1:  # no "more" line needed: its room is a row's
            room_rows += 1
        shown = buckets[: max(0, min(self.max_rows, room_rows))]
        if not shown:  # a short stage: what comes below keeps its room
            says = f"{len(buckets)} bucket(s) this step: see the Run tab (Ctrl+T)"
            return self.page.para(y, says, t.muted, "buckets.more")
        self._row(y, heads, widths, chart, t.muted, "buckets.head")
        y += lh
        t0 = min(min(bt.launched.values()) for bt in buckets)
        t1 = max(max(bt.finished.values()) for bt in buckets)
        span = max(t1 - t0, 1e-6)
        for bt, row in zip(shown, cells, strict=False):
            self._row(y, row, widths, chart, t.text, f"bucket{bt.index}")
            if chart >= MIN_CHART_PX:
                self._bars(bt, x0, y, chart, t0, span)
            y += lh
        if chart >= MIN_CHART_PX:
            y = self._axis(x0, y, chart, span)
        if len(shown) < len(buckets):
            more = len(buckets) - len(shown)
            y = self.page.para(
                y, f"… and {more} more bucket(s): all of them in the Run tab (Ctrl+T)", t.muted
            )
        return y

    def _row(self, y: float, row: list[str], widths: list[float], chart: float, color: str,
             key: str) -> None:  # fmt: skip
        b, f = self.b, self.f
        x = b.pad
        for i, cell in enumerate(row):
            if i == self.split:
                x += max(chart, 0.0) + f.px
            right = i >= 1  # numbers align on their right edge
            k = f"{key}.{self.keep[i]}" if key else ""
            b.text(x + widths[i] - f.px * 0.8 if right else x, y, cell, f, color,
                   Align.RIGHT if right else Align.LEFT, k)  # fmt: skip
            x += widths[i]

    def _bars(self, bt: BucketTime, x0: float, y: float, chart: float, t0: float,
              span: float) -> None:  # fmt: skip
        b, lh = self.b, self.page.lh
        ranks = sorted(bt.launched)
        h = lh * 0.7 / max(1, len(ranks))
        go = max(bt.launched.values())  # the all-reduce can begin once the last launched it
        for j, r in enumerate(ranks):
            a, end = bt.launched[r], bt.finished[r]
            top = y + lh * 0.15 + j * h

            def box(u: float, v: float, top: float = top) -> Rect:
                left = x0 + chart * (u - t0) / span
                return Rect(left, top, max(1.5, chart * (v - u) / span), max(1.5, h * 0.85))

            color = b.t.rank_color(r)
            if go > a:
                b.shape(kind="rect", box=box(a, min(go, end)), fill=color, fill_alpha=60,
                        key=f"bucket.{r}.{bt.index}.wait")  # fmt: skip
            b.shape(kind="rect", box=box(max(a, min(go, end)), end), fill=color, fill_alpha=230,
                    key=f"bucket.{r}.{bt.index}")  # fmt: skip

    def _axis(self, x0: float, y: float, chart: float, span: float) -> float:
        """Ticks in ms after the first rank's first launch, under the rows."""
        b, f, t = self.b, self.f, self.b.t
        span_ms = span * 1e3
        step = nice_step(span_ms)
        b.shape(kind="line", box=Rect(x0, y, chart, 0), points=((x0, y), (x0 + chart, y)),
                stroke=t.muted, width=1.0, key="buckets.axis")  # fmt: skip
        k, last_right = 0, -math.inf
        while k * step <= span_ms + 1e-9:
            x = x0 + chart * (k * step) / span_ms
            label = f"{k * step:g}" + (" ms" if (k + 1) * step > span_ms else "")
            w = b.width(label, f)
            left = min(max(x - w / 2, x0 - w / 2), x0 + chart - w)
            if left > last_right + f.px * 0.5:
                b.shape(kind="line", box=Rect(x, y, 0, 4), points=((x, y), (x, y + 4)),
                        stroke=t.muted, width=1.0, key="buckets.tick")  # fmt: skip
                b.text(left, y + 3, label, f, t.muted, key=f"buckets.tick.{k}")
                last_right = left + w
            k += 1
        return y + 3 + self.page.lh
