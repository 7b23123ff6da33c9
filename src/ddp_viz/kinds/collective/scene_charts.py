"""The ring lesson's closing picture: bytes each rank sent (naive against ring) and the measured
time of one all-reduce against vector length, both from the run's own counts and timings."""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

from ddp_viz.kinds.collective.model import BYTES_PER_VALUE
from ddp_viz.model.frame import Align, Font, Rect, fmt, wrap_lines
from ddp_viz.model.scenes.base import LINE

if TYPE_CHECKING:
    from ddp_viz.kinds.collective.scene import _Builder  # which imports this module

ALGO_LABEL = {"naive": "naive", "ring": "ring", "all_reduce": "dist.all_reduce"}


def _color(b: _Builder, algo: str) -> str:
    return {"naive": b.t.bad, "ring": b.t.accent, "all_reduce": b.t.muted}[algo]


def draw_charts(b: _Builder, top: float) -> None:
    """Side by side on a wide stage, one above the other on a narrow one."""
    width, height = b.ctx.width - 2 * b.pad, b.ctx.height - top
    if width >= 2.2 * height or width >= 900:
        half = (width - b.pad) / 2
        _bytes(b, Rect(b.pad, top, half, height))
        _times(b, Rect(b.pad * 2 + half, top, half, height))
    else:
        _bytes(b, Rect(b.pad, top, width, height * 0.5))
        _times(b, Rect(b.pad, top + height * 0.5, width, height * 0.5))


def _bytes(b: _Builder, area: Rect) -> None:
    f = b.small
    lh = f.px * LINE
    col, world = b.col, b.world
    b.text(area.x, area.y, "bytes each rank sent", Font(f.px, bold=True), b.t.text)
    sent = {
        (algo, r): col.results[(algo, r)].bytes_sent
        for algo in ("naive", "ring")
        for r in range(world)
        if (algo, r) in col.results
    }
    if not sent:
        return
    most = max(sent.values()) or 1
    label_w = b.width(f"rank {world - 1}", f) + f.px * 0.5
    number_w = b.width(f"{most:,} B", f) + f.px * 0.5
    bar_room = max(1.0, area.w - label_w - number_w)
    # two bars a rank, never thinner than the rank's label needs; too many ranks: the first
    # ones and the last (rank 0 is naive's root; the others all look alike)
    bars_h = area.h - 2 * lh
    fit = max(2, int(bars_h // (lh * 1.1)))
    # ranks left out: room for the line that says so (two lines at most), while ranks 0, 1 and
    # the last are still drawn (the line points at rank 1)
    if fit < world and (bars_h - lh * 3.2) // (lh * 1.1) >= 3:
        bars_h -= lh * 3.2
        fit = int(bars_h // (lh * 1.1))
    ranks = list(range(world)) if world <= fit else [*range(fit - 1), world - 1]
    bar_h = min(lh, bars_h / max(1, 2 * len(ranks)))
    y = area.y + lh
    for r in ranks:
        b.text(area.x, y + bar_h - f.px * LINE / 2, f"rank {r}", f, b.t.rank_color(r))
        for algo in ("naive", "ring"):
            n = sent.get((algo, r), 0)
            w = bar_room * n / most
            b.shape(
                kind="rect",
                box=Rect(area.x + label_w, y + 1, max(1.0, w), bar_h - 2),
                fill=_color(b, algo),
                key=f"bar.{algo}.{r}",
            )
            if bar_h >= f.px * b.line:  # room for the number beside its bar
                b.text(
                    area.x + label_w + w + 3,
                    y + (bar_h - f.px * LINE) / 2,
                    f"{n:,} B",
                    f,
                    b.t.text,
                    key=f"bytes.{algo}.{r}",
                    value=float(n),
                )
            y += bar_h
    y = min(y + lh * 0.3, area.bottom - lh)
    b.text(area.x, y, "■ naive", f, _color(b, "naive"))
    b.text(area.x + b.width("■ naive  ", f), y, "■ ring", f, _color(b, "ring"))
    # what the counts should be, worked out: the formulas the bars are checked against
    length = int(b.rec.scenario.get("collective", {}).get("length", 0))
    whole = length * BYTES_PER_VALUE
    lines = [
        f"ring: about 2 (N − 1) / N × {whole:,} B = {2 * (world - 1) * whole / world:,.0f} B "
        "a rank",
        f"naive: rank 0 sends (N − 1) × {whole:,} B = {(world - 1) * whole:,} B",
    ]
    if len(ranks) < world:  # the ranks left out send what their neighbours send
        lines.insert(0, left_out(ranks, world))
    y += lh * 1.2
    for text in lines:
        for line in wrap_lines(text, f, area.w, b.width):
            if y + lh > area.bottom:
                return
            b.text(area.x, y, line, f, b.t.muted)
            y += lh


def round_ticks(top: float, most: int) -> list[float]:
    """0 and round values (1, 2 or 5 × a power of ten apart) up to ``top``, at most ``most``."""
    if top <= 0 or most < 2:
        return [0.0]
    raw = top / (most - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [k * step for k in range(int(top / step + 1e-9) + 1)]


def _times(b: _Builder, area: Rect) -> None:
    f = b.small
    lh = f.px * LINE
    title = "time of one all-reduce in ms, by values per rank"
    if b.width(title, Font(f.px, bold=True)) > area.w:
        title = "ms per all-reduce"
    b.text(area.x, area.y, title, Font(f.px, bold=True), b.t.text)
    top = area.y + lh * 1.6
    cores, world = b.rec.cores, b.rec.world_size
    if 0 < cores < world:  # the ranks take turns on the cores: the times say little
        note = f"{world} ranks on {cores} cores take turns: these times are mostly waiting"
        for line in wrap_lines(note, f, area.w, b.width)[:2]:
            b.text(area.x, top - lh * 0.5, line, f, b.t.bad)
            top += lh
    by: dict[str, dict[int, float]] = {}
    for timing in b.col.timings:
        by.setdefault(timing.algo, {})[timing.length] = timing.seconds
    lengths = sorted({n for series in by.values() for n in series})
    if not lengths:
        return
    slowest = max(s for series in by.values() for s in series.values()) * 1000 or 1.0
    axis_w = b.width(fmt(slowest, 3), f) + f.px * 0.5
    legend = _legend_rows(b, f, area.w)
    # under the plot: the lengths' line, then the legend's rows
    plot = Rect(
        area.x + axis_w, top, area.w - axis_w - f.px, area.bottom - top - lh * (1.7 + len(legend))
    )
    if plot.h < lh * 2 or plot.w < f.px * 6:
        return
    b.shape(
        kind="line", points=((plot.x, plot.bottom), (plot.right, plot.bottom)), stroke=b.t.muted
    )
    b.shape(kind="line", points=((plot.x, plot.y), (plot.x, plot.bottom)), stroke=b.t.muted)
    # the axis' numbers sit inside its height: the slowest below the title, round values
    # between it and 0 above the corner, as many as fit a line apart
    b.text(plot.x - 3, plot.y, fmt(slowest, 3), f, b.t.muted, Align.RIGHT, key="time.axis")
    for v in round_ticks(slowest, max(2, min(6, int(plot.h / (lh * 1.4))))):
        y = plot.bottom - plot.h * v / slowest
        if y - lh / 2 < plot.y + lh * 1.1 and v > 0:
            continue  # too close to the slowest's label
        top = min(plot.bottom - lh, y - lh / 2)
        b.text(plot.x - 3, top, fmt(v, 3), f, b.t.muted, Align.RIGHT, key="time.axis")
        b.shape(kind="line", points=((plot.x - 3, y), (plot.x, y)), stroke=b.t.muted)
    low, high = math.log10(lengths[0]), math.log10(lengths[-1])

    def x_of(n: int) -> float:
        return plot.x + plot.w * (0.5 if high == low else (math.log10(n) - low) / (high - low))

    last_right = -math.inf
    for n in lengths:
        label = f"{n:,}"
        w = b.width(label, f)
        left = min(x_of(n) - w / 2, area.right - w)  # the last label keeps inside the chart
        if left > last_right + f.px * 0.5:
            b.text(left, plot.bottom + 2, label, f, b.t.muted)
            last_right = left + w
    for algo in ("naive", "ring", "all_reduce"):
        series = by.get(algo, {})
        points = [
            (x_of(n), plot.bottom - plot.h * series[n] * 1000 / slowest)
            for n in lengths
            if n in series
        ]
        for p, q in itertools.pairwise(points):
            b.shape(kind="line", points=(p, q), stroke=_color(b, algo), width=2.5)
        for (px, py), n in zip(points, [n for n in lengths if n in series], strict=True):
            dot = f.px * 0.45
            b.shape(
                kind="ellipse",
                box=Rect(px - dot / 2, py - dot / 2, dot, dot),
                fill=_color(b, algo),
                key=f"time.{algo}.{n}",
            )
    y = area.bottom - lh * len(legend)
    for row in legend:
        x = area.x
        for algo, label in row:
            b.text(x, y, label, f, _color(b, algo))
            x += b.width(label + "   ", f)
        y += lh


def _legend_rows(b: _Builder, f: Font, width: float) -> list[list[tuple[str, str]]]:
    """The time chart's legend, (algorithm, label) as many to a row as fit ``width``: on a
    projector's stage the three in one row ran "— dist.all_reduce" past the stage's edge."""
    rows: list[list[tuple[str, str]]] = [[]]
    x = 0.0
    for algo in ("naive", "ring", "all_reduce"):
        label = f"— {ALGO_LABEL[algo]}"
        if rows[-1] and x + b.width(label, f) > width:
            rows.append([])
            x = 0.0
        rows[-1].append((algo, label))
        x += b.width(label + "   ", f)
    return rows


def left_out(ranks: list[int], world: int) -> str:
    """The line that names the ranks the bytes chart leaves out: those between the first
    ones drawn and the last (``ranks``: the ones drawn)."""
    first, last = ranks[-2] + 1, world - 2
    which = f"rank {first}" if first == last else f"ranks {first}–{last}"
    return f"{which} not drawn: like ranks 1 and {world - 1}"
