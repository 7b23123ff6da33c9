"""The lanes of the DDP step scene: one per rank, with its shard, its gradients before and after
DDP's all-reduce, the hub where they meet, and the parameters after the step."""

from __future__ import annotations

import math

from ddp_viz.kinds.ddp_step.scene_labels import baseline, grad_label, param_label
from ddp_viz.kinds.ddp_step.scene_layout import ARROW_EMS, LanesLayout, _Layout
from ddp_viz.model.frame import Align, Font, Rect, fmt
from ddp_viz.model.protocol import Grads
from ddp_viz.model.report import shard_label
from ddp_viz.model.scenes.base import ease
from ddp_viz.model.scenes.base import short_name as short_name
from ddp_viz.model.timeline import StepRecord, display_value

AVERAGED_FROM = 0.5  # the averaged values arrive halfway through the all-reduce phase


class LanesBuilder(LanesLayout):
    """Draws the lanes; the scene sets ``rec``, ``cursor``, ``progress``, ``phase`` and
    ``step`` before calling :meth:`layout` and the drawing methods."""

    _row_pos: dict[int, tuple[float, float]]  # where each data row is drawn (chips fly from it)

    def averaged_shown(self) -> bool:
        return self.phase >= 3 or (self.phase == 2 and self.progress >= AVERAGED_FROM)

    def grad_widths(self, lay: _Layout) -> tuple[float, float]:
        """Widest gradient label and number of this frame, measured once for every lane."""
        if getattr(self, "_grad_widths", None) is None:
            f = lay.f
            label_w = max([self.width(grad_label(p), Font(f)) for p in lay.shown] + [f])
            num_w = self.number_widths(lay.row)[0]
            self._grad_widths = (label_w, num_w)
        return self._grad_widths

    # --- pieces ------------------------------------------------------------------------------
    def lane(self, lay: _Layout, r: int) -> None:
        t, st = self.t, self.step
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
        self.who_and_shard(lay, r, top)
        if st is None or st.ranks.get(r) is None:
            return
        rs = st.ranks[r]
        top += row_h if lay.header else 0.0  # the values' rows start under the header
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

    def who_and_shard(self, lay: _Layout, r: int, top: float) -> None:
        """Rank, pid, its rows (a chip flying in from the data table in phase 1) and its
        loss: in two columns, or one after the other on the lane's header row."""
        t, f, st = self.t, lay.f, self.step
        color = t.rank_color(r)
        row_h = lay.row * self.line
        lane = lay.lanes[r]
        x = lay.cols[0] + f * 0.3
        marker_y = top + row_h / 2 if lay.header else lane.cy
        self.shape(
            kind="marker",
            box=Rect(x, marker_y - f * 0.45, f * 0.9, f * 0.9),
            fill=color,
            stroke=t.text,
            width=1.2,
            key=f"marker:{t.rank_marker(r)}",
        )
        y0 = top + baseline(f, lay.row)
        rank = self.text(x + f * 1.4, y0, f"rank {r}", Font(f, bold=True), t.text)
        pid = self.rec.pids.get(r)
        pid_text = f"pid {pid}" if pid else "starting"
        if lay.one_row:  # rank and rows on the lane's one row; pid and loss give way
            self.shard_chip(lay, r, rank.box.right + f * 0.6, top)
            return
        if lay.header:  # rank and pid left of the hub, rows and loss right of it
            self.text(rank.box.right + f * 0.6, y0, pid_text, Font(f), t.muted)
            chip_x, chip_y, loss_x, loss_y = lay.cols[4] + f * 0.3, top, 0.0, y0
        else:
            self.text(x + f * 1.4, top + row_h + baseline(f, lay.row), pid_text, Font(f), t.muted)
            chip_x, chip_y = lay.cols[1] + f * 0.3, top
            loss_x, loss_y = chip_x, top + row_h + baseline(f, lay.row)
        chip = self.shard_chip(lay, r, chip_x, chip_y)
        rs = st.ranks.get(r) if st is not None else None
        if self.phase >= 1 and rs is not None and rs.loss is not None:
            # digits are shown whole from their phase's first frame: a lecturer who pauses as
            # they appear must be able to read them (a fade-in left them at 10% when paused)
            x_loss = chip.right + f * 0.6 if lay.header else loss_x
            text = f"loss {fmt(rs.loss)}"
            self.text(x_loss, loss_y, text, Font(f), t.text, key=f"rank{r}.loss", value=rs.loss)

    def shard_chip(self, lay: _Layout, r: int, dst_x: float, dst_y: float) -> Rect:
        """The rank's rows as a chip at (``dst_x``, ``dst_y``); in phase 1 it flies there
        from the data table. Returns where it ends."""
        t, f = self.t, lay.f
        color = t.rank_color(r)
        rows = self.rec.shards[r] if r < len(self.rec.shards) else []
        label = shard_label(rows)
        chip_w = self.width(label, Font(f)) + f * 0.6
        chip_h = lay.row * self.line
        x, y, layer = dst_x, dst_y, 0
        if self.phase == 0 and self.step is not None and rows and rows[0] in self._row_pos:
            k = ease(self.progress)
            src_x, src_y = self._row_pos[rows[0]]
            x, y = src_x + (dst_x - src_x) * k, src_y + (dst_y - src_y) * k
            layer = 1  # in flight: above the table and the other lanes, on an opaque ground
        box = Rect(x, y, chip_w, chip_h)
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
        ty = y + (chip_h - f * self.line) / 2
        self.text(x + f * 0.3, ty, label, Font(f), t.text, key=f"rank{r}.rows", layer=layer)
        return Rect(dst_x, dst_y, chip_w, chip_h)

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
        left, right = lay.cols[col] + f * 0.3, lay.cols[col + 1] - lay.pad
        label_w, num_w = self.grad_widths(lay)
        # with a header row the columns are tight: the averaged rows share the local rows'
        # labels (they are on the same lines), their bars start at the column's left
        labelled = (col == 2 or not lay.header) and not lay.one_row
        bar_l = left + (label_w + f * 0.4 if labelled else 0.0)
        bar_r = right - num_w - f * 0.4
        for i, p in enumerate(lay.shown):  # the bars grow; the digits are whole at once
            y = top + i * n * self.line
            v = display_value(grads.get(p.name))
            if labelled:
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
            self.text(left, y + baseline(f, n), f"+{lay.hidden} more", Font(f), t.muted)

    def after_step(self, lay: _Layout, r: int, params: Grads, color: str, top: float) -> None:
        """Each parameter's old value, an arrow growing towards the new one (at the digits'
        middle height, so it reads as "becomes", not as a blank to fill in), the new value."""
        t, f, n = self.t, lay.f, lay.row
        left, right = lay.cols[5] + f * 0.3, lay.cols[6] - lay.pad
        before = self.rec.params_before(self.cursor.step)
        k = ease(self.progress)
        for i, p in enumerate(lay.shown):
            y = top + i * n * self.line
            b = display_value(before.get(p.name))
            a = display_value(params.get(p.name))
            if lay.one_row:  # no room for the old value: the arrow says "becomes"
                after = self.text(right, y, fmt(a), Font(n, mono=True), t.text, Align.RIGHT,
                                  key=f"rank{r}.params.{p.name}", value=a)  # fmt: skip
                self.arrow(left, left + (after.box.x - f * 0.3 - left) * k, after.box.cy, color, f)
                continue
            head = self.text(
                left,
                y + baseline(f, n),
                fmt(b) if lay.header else f"{param_label(p)} {fmt(b)}",
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
            x0, x1 = head.box.right + f * 0.3, after.box.x - f * 0.3
            if x1 - x0 >= f * ARROW_EMS * 0.5:
                self.arrow(x0, x0 + (x1 - x0) * k, after.box.cy, color, f)

    def arrow(self, x0: float, x1: float, y: float, color: str, f: float) -> None:
        w = max(2.0, self.t.line_px)
        self.shape(kind="line", points=((x0, y), (x1, y)), stroke=color, width=w, key="arrow")
        head = f * 0.35
        for dy in (-head, head):
            self.shape(
                kind="line",
                points=((x1 - head, y + dy), (x1, y)),
                stroke=color,
                width=w,
                key="arrow",
            )
