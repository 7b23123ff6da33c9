"""The trade-off scene's two pictures: PowerSGD's factors beside the gradient they approximate,
and the whole run's loss and bytes per step, every variant on the same axes."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

from ddp_viz.model.frame import Align, Font, Rect
from ddp_viz.model.scenes.base import LINE

if TYPE_CHECKING:
    from ddp_viz.kinds.hook_compression.scene import _Builder  # which imports this module


def _heat(
    b: _Builder, x: float, y: float, cell: float, rows: list[list[float]], top: float
) -> None:
    """A block of cells, accent for positive values and red for negative, stronger when
    larger; ``top`` is the magnitude drawn at full strength."""
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            alpha = int(255 * min(1.0, abs(v) / top)) if top > 0 else 0
            b.shape(
                kind="rect",
                box=Rect(x + j * cell, y + i * cell, cell, cell),
                fill=b.t.accent if v >= 0 else b.t.bad,
                fill_alpha=alpha,
            )
    w, h = cell * len(rows[0]) if rows else 0.0, cell * len(rows)
    b.shape(kind="rect", box=Rect(x, y, w, h), stroke=b.t.muted, width=1)


def draw_factors(b: _Builder, area: Rect, low: Any) -> None:
    """The exact average's corner, P and Q's first rows, and P Qᵀ's corner, side by side."""
    f = b.small
    lh = f.px * LINE
    if low is None:
        text = "PowerSGD's warm-up: a plain all-reduce, no P and Q yet"
        if b.width(text, f) > area.w:
            text = "warm-up: no P and Q yet"
        b.text(area.x, area.y, text, f, b.t.muted, key="factors.none")
        return
    n, m = low.shape
    r = low.rank_r
    bold = Font(f.px, bold=True)
    titles = [f"{low.layer} ({n}×{m}) ≈ P ({n}×{r}) · Qᵀ ({r}×{m})", f"{n}×{m} ≈ P·Qᵀ, r = {r}"]
    title = next((t for t in titles if b.width(t, bold) <= area.w), titles[-1])
    b.text(area.x, area.y, title, bold, b.t.text, key="factors.title")
    c = len(low.exact)
    gap = f.px * 0.8
    # two c × c blocks and P's and Q's r columns, in the width and the height left
    cell = min((area.w - 3 * gap) / (2 * c + 2 * r), (area.h - 3.4 * lh) / c)
    if cell < 2:
        return
    top = max(abs(v) for row in low.exact for v in row) or 1.0
    y = area.y + lh * 2.15  # the blocks' labels sit a whole line under the title
    x = area.x
    blocks = [
        ("exact", low.exact, top),
        ("P", low.p, max(abs(v) for row in low.p for v in row) or 1.0),
        ("Q", low.q, max(abs(v) for row in low.q for v in row) or 1.0),
        ("P·Qᵀ", low.approx, top),
    ]
    for label, rows, scale in blocks:
        b.text(x, y - lh, label, f, b.t.muted, key=f"factors.{label}")
        _heat(b, x, y, cell, rows, scale)
        x += cell * len(rows[0]) + gap
    sent = r * (n + m)
    note = f"first {c} rows and columns · a rank sends {sent:,} values for it, not {n * m:,}"
    if b.width(note, f) > area.w:
        note = f"sends {sent:,} values, not {n * m:,}"
    if b.width(note, f) <= area.w:  # else left out: it ran past the stage's edge
        b.text(area.x, y + cell * c + lh * 0.3, note, f, b.t.muted, key="factors.note")


SMOOTH = 10  # the loss curves: the mean of the last steps' losses (each step has new rows)


def _series(b: _Builder, which: str) -> list[list[float | None]]:
    part, out = b.part, []
    for v in b.variants:
        row: list[float | None] = []
        for s in range(b.spec.steps):
            if which == "loss":
                window = [part.loss(v.id, k) for k in range(max(0, s - SMOOTH + 1), s + 1)]
                known = [x for x in window if x is not None]
                row.append(sum(known) / len(known) if len(known) == len(window) else None)
            else:
                sent = part.sent(v.id, s)
                row.append(None if sent is None else float(sent))
        out.append(row)
    return out


def _chart(b: _Builder, area: Rect, which: str, step: int) -> None:
    f = b.small
    lh = f.px * LINE
    titles = (
        [f"loss, mean of {SMOOTH} steps (log)", "loss (log)"]
        if which == "loss"
        else ["bytes a rank sent a step (log)", "bytes a step (log)", "bytes (log)"]
    )
    bold = Font(f.px, bold=True)
    # the longest that fits its half of the stage (a projector's type at 1280×800)
    title = next((x for x in titles if b.width(x, bold) <= area.w), titles[-1])
    b.text(area.x, area.y, title, bold, b.t.text, key=f"chart.{which}")
    series = _series(b, which)
    values = [v for row in series for v in row if v is not None and v > 0]
    if not values:
        return
    low, high = math.log10(min(values)), math.log10(max(values))
    if high - low < 1e-9:
        low, high = low - 0.5, high + 0.5
    label = (lambda v: f"{v:.3g}") if which == "loss" else (lambda v: f"{v / 1e3:,.1f} kB")
    axis_w = max(b.width(label(10**high), f), b.width(label(10**low), f)) + f.px * 0.4
    plot = Rect(area.x + axis_w, area.y + lh * 1.5, area.w - axis_w, area.h - lh * 2.7)
    if plot.h < lh * 2 or plot.w < f.px * 4:
        return
    t = b.t
    b.shape(kind="line", points=((plot.x, plot.bottom), (plot.right, plot.bottom)), stroke=t.muted)
    b.shape(kind="line", points=((plot.x, plot.y), (plot.x, plot.bottom)), stroke=t.muted)
    b.text(plot.x - 3, plot.y, label(10**high), f, t.muted, Align.RIGHT)
    b.text(plot.x - 3, plot.bottom - lh, label(10**low), f, t.muted, Align.RIGHT)
    steps = b.spec.steps

    def at(s: int, v: float) -> tuple[float, float]:
        x = plot.x + plot.w * (s / max(1, steps - 1))
        return x, plot.bottom - plot.h * (math.log10(v) - low) / (high - low)

    # at most one point a pixel and a half: a long run is thinned, not drawn over itself
    stride = max(1, math.ceil(steps / (plot.w / 1.5)))
    for i, row in enumerate(series):
        # up to the stage's step: a replay shows no step before its turn (the axes span the
        # whole run, so they do not jump as it plays)
        points = [
            at(s, v)
            for s, v in enumerate(row[: step + 1])
            if v and v > 0 and (s % stride == 0 or s == step)
        ]
        for p, q in itertools.pairwise(points):
            b.shape(kind="line", points=(p, q), stroke=b.color(i), width=2)
    x = plot.x + plot.w * (step / max(1, steps - 1))
    b.shape(kind="line", points=((x, plot.y), (x, plot.bottom)), stroke=t.text, width=1)
    b.text(plot.x, plot.bottom + 2, "1", f, t.muted)
    b.text(plot.right, plot.bottom + 2, f"step {steps}", f, t.muted, Align.RIGHT)


def draw_charts(b: _Builder, area: Rect, step: int) -> None:
    """Loss and bytes side by side, or one above the other on a narrow stage."""
    if area.w >= 1.6 * area.h:
        half = (area.w - b.pad) / 2
        _chart(b, Rect(area.x, area.y, half, area.h), "loss", step)
        _chart(b, Rect(area.x + half + b.pad, area.y, half, area.h), "bytes", step)
    else:
        _chart(b, Rect(area.x, area.y, area.w, area.h / 2), "loss", step)
        _chart(b, Rect(area.x, area.y + area.h / 2, area.w, area.h / 2), "bytes", step)
