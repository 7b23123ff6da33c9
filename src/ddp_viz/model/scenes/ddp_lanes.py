"""The lanes of the DDP step scene: one per rank, with its shard, its gradients before and after
DDP's all-reduce, the hub where they meet, and the parameters after the step."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddp_viz.model.frame import Align, Font, Rect, fmt
from ddp_viz.model.modelspec import ParamInfo
from ddp_viz.model.protocol import Grads
from ddp_viz.model.report import shard_label
from ddp_viz.model.scenes.base import LINE, FrameBuilder, ease
from ddp_viz.model.scenes.buckets_parts import short_name as short_name
from ddp_viz.model.scenes.ddp_labels import baseline, grad_label, param_label
from ddp_viz.model.timeline import Cursor, RunRecord, StepRecord, display_value

AVERAGED_FROM = 0.5  # the averaged values arrive halfway through the all-reduce phase


@dataclass
class _Layout:
    f: float  # lane type size
    rows: int  # text rows per lane
    shown: list[ParamInfo]  # parameters with a row of their own
    hidden: int  # parameters summarised as "+k more"
    data: Rect  # the data table (w = 0: folded away)
    lanes: list[Rect]
    cols: list[float]  # x of the 6 column starts, plus the right edge
    strip: bool = False  # the table runs across the top (narrow stages) instead of down the left
    num: float = 0.0  # the gradients' and new parameters' type; rows are this tall

    @property
    def row(self) -> float:
        return max(self.f, self.num)


class LanesBuilder(FrameBuilder):
    """Draws the lanes; the scene sets ``rec``, ``cursor``, ``progress``, ``phase`` and
    ``step`` before calling :meth:`layout` and the drawing methods."""

    rec: RunRecord
    _row_pos: dict[int, tuple[float, float]]  # where each data row is drawn (chips fly from it)
    cursor: Cursor
    progress: float
    phase: int
    step: StepRecord | None

    lane_pad: float = 0.5  # ems of space around a lane's rows (0.15 when space is short)

    def averaged_shown(self) -> bool:
        return self.phase >= 3 or (self.phase == 2 and self.progress >= AVERAGED_FROM)

    @property
    def lane_gap(self) -> float:
        return max(3.0, self.base * 0.25)

    # --- layout ------------------------------------------------------------------------------
    def layout(self, top: float, bottom: float) -> _Layout:
        n = max(1, self.rec.world_size)
        params = self.rec.params
        gap = self.lane_gap
        height = max(1.0, bottom - top)
        lane_h = (height - gap * (n - 1)) / n
        shown = list(params)
        while True:
            rows = max(2, len(shown) + (1 if len(shown) < len(params) else 0))
            f = min(self.base, lane_h / (rows * self.line + self.lane_pad))
            if f >= self.ctx.min_px or rows <= 2:
                break
            shown = shown[:-1]  # fewer parameter rows, never smaller type than the floor
        # a roomy stage grows the lane type a little; a narrow one shrinks it to fit the width
        f = min(self.base * 1.35, lane_h / (rows * self.line + self.lane_pad)) if rows <= 2 else f
        keep_table = max(self.ctx.min_px, self.t.font_px * 0.85)
        # The numbers the lesson is about keep the theme's floor (a projector's: as large as
        # the code view's type) while the width allows; the labels around them shrink first.
        # Below the floor only where the height does not allow it (a projector at 8 ranks).
        num_floor = min(self.ctx.min_px, f)
        f_t, data_w, x0, avail, widths = self.fit_width(f, shown, True, num_floor)
        if f_t < keep_table or sum(widths) > avail:  # fold the table before the numbers shrink
            f_t, data_w, x0, avail, widths = self.fit_width(f, shown, False, num_floor)
        f, num = f_t, max(f_t, num_floor)
        lane_h = min(lane_h, num * (rows * self.line + 1.2))
        block = lane_h * n + gap * (n - 1)
        strip_h = self.strip_height(f) if not data_w else 0.0
        strip = strip_h > 0 and strip_h + gap * 2 <= height - block
        data_top = top
        if strip:  # the rows run across the top; the lanes sit below them
            top, height = top + strip_h + gap * 2, height - strip_h - gap * 2
        y0 = top + (height - block) / 2
        spare = max(0.0, avail - sum(widths))
        for i, share in ((2, 0.3), (3, 0.1), (4, 0.3), (5, 0.1), (1, 0.2)):
            widths[i] += spare * share
        cols = [x0]
        for w in widths:
            cols.append(cols[-1] + w)
        lanes = [Rect(x0, y0 + i * (lane_h + gap), cols[-1] - x0, lane_h) for i in range(n)]
        if strip:
            data = Rect(self.pad, data_top, self.ctx.width - 2 * self.pad, strip_h)
        else:
            data = Rect(self.pad, top, data_w, height)
        return _Layout(f, rows, shown, len(params) - len(shown), data, lanes, cols, strip, num)

    def row_cells(self, f: float) -> list[str]:
        x, y = self.rec.scenario.get("x", []), self.rec.scenario.get("y", [])
        return [f"{i + 1}: {fmt(a)}, {fmt(b)}" for i, (a, b) in enumerate(zip(x, y, strict=False))]

    def strip_height(self, f: float) -> float:
        """Height of the data rows laid across the stage, or 0 when two lines do not hold them."""
        cells = self.row_cells(f)
        if not cells:
            return 0.0
        font = Font(f, mono=True)
        room = self.ctx.width - 2 * self.pad - self.width("data (x, y)", Font(f)) - f * 1.5
        lines, used = 1, 0.0
        for cell in cells:
            w = self.width(cell, font) + f
            if used + w > room:
                lines, used = lines + 1, 0.0
            used += w
        return 0.0 if lines > 2 else lines * f * LINE * 1.15 + f * 0.5

    def fit_width(
        self, f: float, shown: list[ParamInfo], table: bool, num_floor: float
    ) -> tuple[float, float, float, float, list[float]]:
        """The largest label type up to ``f`` whose columns (and the data table) fit the
        width, the numbers at ``num_floor`` or more: (label type, table width, x of the
        lanes, their width, column widths)."""
        # Below the floor only when nothing else fits: small type beats numbers off the stage
        # (a projector's stage, with the side panels folded, is wide enough for its floor).
        floor = 7.0
        for _ in range(6):  # widths grow in proportion to the type: one guess, then a check
            num = max(f, num_floor)
            data_w = self.data_width(f) if table else 0.0
            x0 = self.pad + data_w + (self.pad if data_w else 0)
            avail = self.ctx.width - self.pad - x0
            widths = self.columns(f, shown, num)
            need = sum(widths)
            if need <= avail or f <= floor:
                break
            room = self.ctx.width - 2 * self.pad - (self.pad if data_w else 0)
            fixed = sum(self.number_widths(num)) if num > f else 0.0  # they do not shrink
            f = max(floor, f * (room - fixed) / max(1.0, need + data_w - fixed) * 0.99)
        if num_floor > floor and f <= floor and need > avail:  # nothing else gives: they do
            return self.fit_width(f, shown, table, floor)
        return f, data_w, x0, avail, widths

    def number_widths(self, num: float) -> tuple[float, float, float]:
        """The widest local gradient, averaged gradient and new parameter at type ``num``."""
        mono = Font(num, mono=True)
        both = self.values_of("local") + self.values_of("averaged")
        grads = max(self.width(v, mono) for v in both)
        return grads, grads, max(self.width(v, mono) for v in self.values_of("params"))

    def grad_widths(self, lay: _Layout) -> tuple[float, float]:
        """Widest gradient label and number of this frame, measured once for every lane."""
        if getattr(self, "_grad_widths", None) is None:
            f = lay.f
            label_w = max([self.width(grad_label(p), Font(f)) for p in lay.shown] + [f])
            num_w = self.number_widths(lay.row)[0]
            self._grad_widths = (label_w, num_w)
        return self._grad_widths

    def values_of(self, kind: str) -> list[str]:
        st = self.step
        if st is None:
            return ["−00.00"]
        out = ["−00.00"]
        for rs in st.ranks.values():
            tensors = {"local": rs.local, "averaged": rs.averaged, "params": rs.params}[kind]
            if tensors:
                out += [fmt(display_value(v)) for v in tensors.values()]
        return out

    def columns(self, f: float, shown: list[ParamInfo], num: float) -> list[float]:
        small, bold = Font(f), Font(f, bold=True)
        num_grads, _, num_params = self.number_widths(num)
        inner = f * 0.6  # padding inside each column
        pids = [f"pid {p}" for p in self.rec.pids.values()] or ["pid 999999"]
        who = f * 1.4 + max(
            self.width(f"rank {self.rec.world_size - 1}", bold),
            max(self.width(p, small) for p in pids),
        )
        shard_texts = [shard_label(r) for r in self.rec.shards] or ["rows 1–2"]
        st = self.step
        losses = [f"loss {fmt(rs.loss)}" for rs in st.ranks.values()] if st else []
        shard = max(self.width(s, small) for s in shard_texts + losses + ["loss −00.00"]) + f
        label = max([self.width(grad_label(p), small) for p in shown] + [f])
        grads = label + f * 0.5 + f * 1.5 + f * 0.5 + num_grads
        hub = max(f * 3.2, self.width("then Σ", Font(f, bold=True)) * 1.5 + f)
        before = self.rec.params_before(self.cursor.step)
        after = (
            max(
                [
                    self.width(
                        f"{param_label(p)} {fmt(display_value(before.get(p.name)))} →", small
                    )
                    + f * 0.4
                    for p in shown
                ]
                + [f]
            )
            + num_params
        )
        return [w + inner for w in (who, shard, grads, hub, grads, after)]

    def data_width(self, f: float) -> float:
        texts = self.row_cells(f)
        if not texts:
            return 0.0
        font = Font(f, mono=True)
        widest = max(self.width(s, font) for s in texts[:50])
        return max(widest, self.width("data (x, y)", Font(f))) + f

    # --- pieces ------------------------------------------------------------------------------
    def lane(self, lay: _Layout, r: int) -> None:
        t, f, st = self.t, lay.f, self.step
        lane = lay.lanes[r]
        color = t.rank_color(r)
        self.shape(
            kind="rrect",
            box=lane,
            stroke=color,
            width=max(1.5, t.line_px),
            fill=color,
            fill_alpha=22,
            radius=6,
        )
        row_h = lay.row * self.line
        top = lane.y + (lane.h - lay.rows * row_h) / 2

        def row_y(i: int) -> float:
            return top + i * row_h

        inner = f * 0.3
        c = [x + inner for x in lay.cols]
        # who
        self.shape(
            kind="marker",
            box=Rect(c[0], lane.cy - f * 0.45, f * 0.9, f * 0.9),
            fill=color,
            stroke=t.text,
            width=1.2,
            key=f"marker:{t.rank_marker(r)}",
        )
        self.text(c[0] + f * 1.4, row_y(0), f"rank {r}", Font(f, bold=True), t.text)
        pid = self.rec.pids.get(r)
        self.text(c[0] + f * 1.4, row_y(1), f"pid {pid}" if pid else "starting", Font(f), t.muted)
        # shard chip, flying in from the data table during phase 1
        rows = self.rec.shards[r] if r < len(self.rec.shards) else []
        label = shard_label(rows)
        chip_w = self.width(label, Font(f)) + f * 0.6
        dst_x, dst_y = c[1], row_y(0)
        x, y, layer = dst_x, dst_y, 0
        if self.phase == 0 and st is not None and rows and rows[0] in self._row_pos:
            k = ease(self.progress)
            src_x, src_y = self._row_pos[rows[0]]
            x, y = src_x + (dst_x - src_x) * k, src_y + (dst_y - src_y) * k
            layer = 1  # in flight: above the table and the other lanes, on an opaque ground
        box = Rect(x, y, chip_w, row_h)
        self.shape(kind="rrect", box=box, fill=t.panel, radius=5, layer=layer)
        self.shape(
            kind="rrect",
            box=box,
            stroke=color,
            fill=color,
            fill_alpha=70,
            width=2,
            radius=5,
            layer=layer,
        )
        self.text(x + f * 0.3, y, label, Font(f), t.text, key=f"rank{r}.rows", layer=layer)
        if st is None:
            return
        rs = st.ranks.get(r)
        if rs is None:
            return
        if self.phase >= 1 and rs.loss is not None:
            # digits are shown whole from their phase's first frame: a lecturer who pauses as
            # they appear must be able to read them (a fade-in left them at 10% when paused)
            self.text(
                c[1],
                row_y(1),
                f"loss {fmt(rs.loss)}",
                Font(f),
                t.text,
                key=f"rank{r}.loss",
                value=rs.loss,
            )
        scale = self.scale(st)
        if self.phase >= 1 and rs.local is not None:
            grow = ease(self.progress) if self.phase == 1 else 1.0
            self.grads(lay, r, 2, "local", rs.local, color, grow, scale, top)
        if rs.averaged is not None and self.averaged_shown():
            grow = (
                ease((self.progress - AVERAGED_FROM) / (1 - AVERAGED_FROM))
                if self.phase == 2
                else 1.0
            )
            self.grads(lay, r, 4, "averaged", rs.averaged, t.accent, grow, scale, top)
        if self.phase == 3 and rs.params is not None:
            self.after_step(lay, r, rs.params, color, top)

    def scale(self, st: StepRecord) -> float:
        vals = [
            abs(display_value(v))
            for rs in st.ranks.values()
            for g in (rs.local, rs.averaged)
            if g
            for v in g.values()
        ]
        vals = [v for v in vals if math.isfinite(v)]
        return max(vals, default=1.0) or 1.0

    def grads(
        self,
        lay: _Layout,
        r: int,
        col: int,
        kind: str,
        grads: Grads,
        color: str,
        grow: float,
        scale: float,
        top: float,
    ) -> None:
        t, f, n = self.t, lay.f, lay.row
        inner = f * 0.3
        left, right = lay.cols[col] + inner, lay.cols[col + 1] - inner
        label_w, num_w = self.grad_widths(lay)
        bar_l, bar_r = left + label_w + f * 0.4, right - num_w - f * 0.4
        for i, p in enumerate(lay.shown):  # the bars grow; the digits are whole at once
            y = top + i * n * self.line
            v = display_value(grads.get(p.name))
            self.text(left, y + baseline(f, n), grad_label(p), Font(f), t.muted)
            frac = min(1.0, abs(v) / scale) if math.isfinite(v) else 0.0
            bar_w = max(1.0, (bar_r - bar_l) * frac * grow)
            self.shape(
                kind="rect",
                box=Rect(bar_l, y + n * 0.25, bar_w, n * 0.8),
                fill=color,
                fill_alpha=200,
                key=f"bar:rank{r}.{kind}.{p.name}",
            )
            self.text(
                right,
                y,
                fmt(v),
                Font(n, mono=True),
                t.text,
                Align.RIGHT,
                key=f"rank{r}.{kind}.{p.name}",
                value=v,
            )
        if lay.hidden:
            y = top + len(lay.shown) * n * self.line
            self.text(left, y, f"+{lay.hidden} more", Font(f), t.muted)

    def after_step(self, lay: _Layout, r: int, params: Grads, color: str, top: float) -> None:
        t, f, n = self.t, lay.f, lay.row
        inner = f * 0.3
        left, right = lay.cols[5] + inner, lay.cols[6] - inner
        before = self.rec.params_before(self.cursor.step)
        k = ease(self.progress)
        for i, p in enumerate(lay.shown):
            y = top + i * n * self.line
            b = display_value(before.get(p.name))
            a = display_value(params.get(p.name))
            head = self.text(
                left,
                y + baseline(f, n),
                f"{param_label(p)} {fmt(b)} →",
                Font(f),
                t.muted,
                key=f"rank{r}.before.{p.name}",
                value=b,
            )
            after = self.text(
                right,
                y,
                fmt(a),
                Font(n, mono=True),
                t.text,
                Align.RIGHT,
                key=f"rank{r}.params.{p.name}",
                value=a,
            )
            # the update travels from the old value to the new one; the digits never do
            x0, x1 = head.box.right + f * 0.15, after.box.x - f * 0.15
            if x1 > x0:
                self.shape(
                    kind="line",
                    points=((x0, y + n * 1.1), (x0 + (x1 - x0) * k, y + n * 1.1)),
                    stroke=color,
                    width=max(2.0, t.line_px),
                )
