"""The data table the shards fly out of, and the all-reduce hub where local gradients meet."""

from __future__ import annotations

from ddp_viz.kinds.ddp_step.scene_lanes import AVERAGED_FROM, LanesBuilder, _Layout
from ddp_viz.model.frame import Align, Font, Rect
from ddp_viz.model.scenes.base import LINE, ease


class TableAndHub(LanesBuilder):
    def data_table(self, lay: _Layout) -> None:
        self._row_pos = {}
        if lay.data.w <= 0:
            return
        t, f = self.t, lay.f
        owner = {i: r for r, rows in enumerate(self.rec.shards) for i in rows}
        cells = self.row_cells(f)
        box = lay.data
        self.shape(kind="rrect", box=box, stroke=t.grid, fill=t.window, radius=6)
        row_h = f * LINE * 1.15
        mono = Font(f, mono=True)
        if lay.strip:
            label = self.text(box.x + f * 0.4, box.y + f * 0.25, "data (x, y)", Font(f), t.muted)
            x0 = label.box.right + f
            x, y, shown = x0, box.y + f * 0.25, len(cells)
            for i, cell in enumerate(cells):
                w = self.width(cell, mono) + f * 0.6
                if x + w > box.right - f * 0.2:
                    x, y = x0, y + row_h
                self._data_cell(Rect(x, y, w, row_h * 0.92), cell, t.rank_color(owner.get(i, 0)))
                self._row_pos[i] = (x, y)
                x += w + f * 0.4
            return
        self.text(box.cx, box.y + f * 0.3, "data (x, y)", Font(f), t.muted, Align.CENTER)
        first = box.y + f * 0.3 + f * LINE * 1.2
        fit = max(1, int((box.bottom - first - f * 0.3) // row_h))
        shown = min(len(cells), fit if fit >= len(cells) else fit - 1)
        for i in range(shown):
            ry = first + i * row_h
            cell_box = Rect(box.x + f * 0.25, ry, box.w - f * 0.5, row_h * 0.92)
            self._data_cell(cell_box, cells[i], t.rank_color(owner.get(i, 0)))
            self._row_pos[i] = (box.cx - f * 2, ry)
        if shown < len(cells):
            more = f"+{len(cells) - shown} more"
            self.text(box.cx, first + shown * row_h, more, Font(f), t.muted, Align.CENTER)

    def _data_cell(self, box: Rect, text: str, color: str) -> None:
        px = box.h / (LINE * 1.15 * 0.92)
        self.shape(
            kind="rrect", box=box, stroke=color, fill=color, fill_alpha=40, width=2, radius=4
        )
        top = box.y + (box.h - px * self.line) / 2
        self.text(box.cx, top, text, Font(px, mono=True), self.t.text, Align.CENTER)

    def hub(self, lay: _Layout) -> None:
        t, f = self.t, lay.f
        lanes = lay.lanes
        cx = (lay.cols[3] + lay.cols[4]) / 2
        cy = (lanes[0].y + lanes[-1].bottom) / 2
        label_font = Font(f, bold=True)
        label_w = max(self.width(s, label_font) for s in (f"÷ {self.rec.world_size}", "then Σ"))
        radius = min(
            (lay.cols[4] - lay.cols[3]) / 2 - f * 0.2,
            max(label_w * 0.75, (lanes[-1].bottom - lanes[0].y) / 2),
        )
        radius = max(radius, label_w * 0.6)
        active, done = self.phase == 2, self.phase >= 2
        lw = max(2.0, t.line_px * (1.5 if active else 1.0))
        dot_r = f * 0.35
        inbound = self.phase > 2 or (done and self.progress >= AVERAGED_FROM)
        for r, lane in enumerate(lanes):
            start = (lay.cols[3] + dot_r, lane.cy)
            end = (lay.cols[4] - dot_r, lane.cy)
            self.shape(
                kind="line",
                points=(start, (cx, cy)),
                stroke=t.rank_color(r),
                stroke_alpha=220 if done else 70,
                width=lw,
            )
            self.shape(
                kind="line",
                points=((cx, cy), end),
                stroke=t.accent,
                stroke_alpha=220 if inbound else 70,
                width=lw,
            )
            if active:
                if self.progress < AVERAGED_FROM:
                    k, a, b, c = (
                        ease(self.progress / AVERAGED_FROM),
                        start,
                        (cx, cy),
                        t.rank_color(r),
                    )
                else:
                    k = ease((self.progress - AVERAGED_FROM) / (1 - AVERAGED_FROM))
                    a, b, c = (cx, cy), end, t.accent
                px, py = a[0] + (b[0] - a[0]) * k, a[1] + (b[1] - a[1]) * k
                self.shape(
                    kind="ellipse",
                    box=Rect(px - dot_r, py - dot_r, 2 * dot_r, 2 * dot_r),
                    fill=c,
                    key="dot",
                )
        self.shape(
            kind="ellipse",
            box=Rect(cx - radius, cy - radius, 2 * radius, 2 * radius),
            stroke=t.accent if done else t.grid,
            width=lw,
            fill=t.panel,
            key="hub",
        )
        color = t.text if done else t.muted
        self.text(
            cx,
            cy - f * LINE,
            f"÷ {self.rec.world_size}",
            label_font,
            color,
            Align.CENTER,
            key="hub.label",
        )
        self.text(cx, cy, "then Σ", label_font, color, Align.CENTER, key="hub.label")
