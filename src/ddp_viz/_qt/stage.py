"""The stage: one DDP training step, animated from the recorded events of a real run.

Four phases (see :data:`ddp_viz.timeline.PHASES`): shards fly to each rank's lane; each rank's
loss and local gradient appear; local gradients flow into "sum ÷ world size" and the average
flows back; every rank's weight and bias move by the same amount and the checks light up.
The widget only paints what the :class:`RunRecord` holds; ``progress`` (0–1) animates a phase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from ddp_viz._qt.theme import qcolor
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.report import rows_label
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import (
    PARAM_NAMES,
    PHASE_TITLES,
    PHASES,
    Cursor,
    RunRecord,
    StepRecord,
    scalar,
    uneven_note,
)


def fmt(v: float, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.{digits}g}".replace("-", "−")


def ease(t: float) -> float:
    t = min(1.0, max(0.0, t))
    return t * t * (3 - 2 * t)


@dataclass
class _Geo:
    """Layout of one paint, recomputed on every resize."""

    title: QRectF
    caption: QRectF
    data: QRectF
    lanes: list[QRectF]
    cols: list[float]  # x of column starts inside lanes, plus the right edge
    hub: QPointF
    hub_r: float
    footer: QRectF
    font_px: float  # lane text
    base: float  # titles and checks


class StageWidget(QWidget):
    def __init__(self, theme: Theme, lesson: Lesson, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.lesson = lesson
        self.record: RunRecord | None = None
        self.cursor = Cursor()
        self.progress = 1.0
        self.message = "Press Run to start real DDP ranks on this machine."
        self._painting = False
        self.smallest_px = float("inf")  # smallest text of the last paint (tests, projector)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(420, 300)
        self.setAccessibleName("DDP stage")

    # --- inputs ------------------------------------------------------------------------------
    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.update()

    def set_record(self, record: RunRecord | None) -> None:
        self.record = record
        self.update()

    def set_position(self, cursor: Cursor, progress: float) -> None:
        self.cursor, self.progress = cursor, progress
        self.update()

    def set_message(self, text: str) -> None:
        self.message = text
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(720, 480)

    # --- painting ----------------------------------------------------------------------------
    def _font(self, px: float, bold: bool = False, mono: bool = False) -> QFont:
        f = QFont(self.font())
        if mono:
            f.setFamilies(["DejaVu Sans Mono", "Menlo", "Consolas", "monospace"])
        f.setPixelSize(max(8, round(px)))
        f.setBold(bold)
        return f

    def _geometry(self, n: int, rows: int) -> _Geo:
        w, h = self.width(), self.height()
        # grow type with the stage on big screens, never below the theme's size
        base = self.theme.font_px * min(1.4, max(1.0, min(w / 760, h / 520)))
        m = base * 0.8
        title = QRectF(m, m * 0.6, w - 2 * m, base * 1.8)
        caption = QRectF(m, title.bottom(), w - 2 * m, base * 2.8)
        footer = QRectF(m, h - base * 2.4 - m * 0.5, w - 2 * m, base * 2.4)
        top, bottom = caption.bottom() + m * 0.5, footer.top() - m * 0.5
        data_w = max(base * 5.5, w * 0.11)
        data_h = min(bottom - top, base * 1.9 * (rows + 1.2) + 8)
        data = QRectF(m, top, data_w, data_h)
        lanes_left = data.right() + m
        lane_gap = max(3.0, base * 0.3)
        lane_h = min((bottom - top - lane_gap * (n - 1)) / max(n, 1), base * 7)
        block_h = lane_h * n + lane_gap * (n - 1)
        y0 = top + (bottom - top - block_h) / 2
        lanes = [
            QRectF(lanes_left, y0 + i * (lane_h + lane_gap), w - m - lanes_left, lane_h)
            for i in range(n)
        ]
        lw = w - m - lanes_left
        self._sample_cache = self._samples()
        # The largest lane type whose columns all fit: nothing in a lane is ever elided.
        font_px = self._fit_font(lw, min(base, lane_h / (3.3 if n > 1 else 3.0)))
        widths = self._column_widths(font_px)
        spare = max(0.0, lw - sum(widths))
        widths[2] += spare * 0.35
        widths[4] += spare * 0.35
        widths[3] += spare * 0.3
        cols = [lanes_left]
        for wd in widths:
            cols.append(cols[-1] + wd)
        hub = QPointF((cols[3] + cols[4]) / 2, y0 + block_h / 2)
        hub_r = min((cols[4] - cols[3]) * 0.42, max(block_h / 2, base * 2.2), font_px * 2.6)
        return _Geo(title, caption, data, lanes, cols, hub, hub_r, footer, font_px, base)

    @property
    def small_ratio(self) -> float:
        """Secondary lane text: slightly smaller, except on a projector (24 px floor there)."""
        return 1.0 if self.theme.name == "projector" else 0.88

    def _samples(self) -> dict[str, list[str]]:
        """The widest strings each lane column will show for this run (measured, not guessed)."""
        rec = self.record
        pids = [f"pid {p}" for p in (rec.pids.values() if rec else [])] or ["pid 888888"]
        rows = [f"rows {rows_label(r)}" for r in (rec.shards if rec else [])] or ["rows 1–2"]
        nums, params = ["−44.5"], ["w 0.5→0.775"]
        if rec is not None and self.cursor.step < len(rec.steps):
            st = rec.steps[self.cursor.step]
            before = rec.params_before(st.step)
            for rs in st.ranks.values():
                for g in (rs.local, rs.averaged):
                    nums += [fmt(scalar(g, n)) for n in PARAM_NAMES] if g else []
                if rs.params:
                    params += [
                        f"{n[0]} {fmt(scalar(before, n), 3)}→{fmt(scalar(rs.params, n), 3)}"
                        for n in PARAM_NAMES
                    ]
        return {"pid": pids, "rows": rows, "num": nums, "params": params}

    def _column_widths(self, f: float) -> list[float]:
        samples = self._sample_cache
        small = QFontMetricsF(self._font(f * self.small_ratio))
        bold = QFontMetricsF(self._font(f, bold=True))
        mono = QFontMetricsF(self._font(f, mono=True))
        mono_small = QFontMetricsF(self._font(f * self.small_ratio, mono=True))

        def widest(metrics: QFontMetricsF, texts: list[str]) -> float:
            return max(metrics.horizontalAdvance(t) for t in texts)

        num = widest(mono, samples["num"]) + f * 0.4
        label = small.horizontalAdvance("∇w") + f * 0.4
        self._num_w, self._label_w = num, label
        pad = f * 0.6 + 2  # _lane_cell pads each side by 0.3 f; +2 px against rounding
        grads = label + f * 1.5 + num + pad
        return [
            f * 1.4 + max(bold.horizontalAdvance("rank 7"), widest(small, samples["pid"])) + pad,
            widest(small, samples["rows"]) + f * 0.6 + pad,
            grads,
            f * 3.0,
            grads,
            widest(mono_small, samples["params"]) + pad,
        ]

    def _fit_font(self, lanes_width: float, upper: float) -> float:
        """Largest type, at most ``upper``, whose columns fit ``lanes_width``.

        Text width grows in proportion to the type size, so one measurement predicts the
        answer; a second or third corrects for hinting. (Runs on every paint of a stream.)
        """
        f = max(7.0, upper)
        for _ in range(4):
            need = sum(self._column_widths(f))
            if need <= lanes_width or f <= 7.0:
                return f
            f = max(7.0, f * lanes_width / need * 0.995)
        return f

    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), qcolor(self.theme.panel))
        rec = self.record
        if rec is None or rec.world_size == 0:
            self._paint_empty(p)
            return
        n = rec.world_size
        g = self._geometry(n, len(rec.scenario.get("x", [])))
        step = rec.steps[self.cursor.step] if self.cursor.step < len(rec.steps) else None
        self._paint_title(p, g, rec, step)
        self._paint_data(p, g, rec)
        phase = self.cursor.phase
        for r in range(n):
            self._paint_lane(p, g, rec, step, r, phase)
        if step is not None:
            self._paint_hub(p, g, rec, step, phase)
        self._paint_footer(p, g, rec, step, phase)
        p.end()

    def _paint_empty(self, p: QPainter) -> None:
        p.setPen(qcolor(self.theme.muted))
        p.setFont(self._font(self.theme.font_px * 1.3))
        p.drawText(
            self.rect().adjusted(20, 20, -20, -20),
            Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
            self.message,
        )

    def _text(
        self,
        p: QPainter,
        rect: QRectF,
        text: str,
        px: float,
        color: str,
        align: Qt.AlignmentFlag = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
        bold: bool = False,
        mono: bool = False,
        wrap: bool = False,
    ) -> None:
        font = self._font(px, bold, mono)
        if self._painting and text:
            self.smallest_px = min(self.smallest_px, font.pixelSize())
        p.setFont(font)
        p.setPen(qcolor(color))
        if wrap:
            p.drawText(rect, int(align) | int(Qt.TextFlag.TextWordWrap), text)
            return
        elided = QFontMetricsF(font).elidedText(text, Qt.TextElideMode.ElideRight, rect.width())
        p.drawText(rect, align, elided)

    def _paint_title(self, p: QPainter, g: _Geo, rec: RunRecord, step: StepRecord | None) -> None:
        t = self.theme
        phase = PHASES[self.cursor.phase]
        total = max(rec.steps_planned, len(rec.steps))
        left = f"Step {self.cursor.step + 1} of {total}  ·  {PHASE_TITLES[phase]}"
        status = {
            "running": "live run",
            "finished": "recorded run",
            "failed": "run failed",
            "cancelled": "run cancelled",
        }.get(rec.status, "")
        right = f"{status} · {rec.world_size} rank(s), gloo"
        right_w = QFontMetricsF(self._font(g.base)).horizontalAdvance(right) + g.base
        left_w = QFontMetricsF(self._font(g.base * 1.25, bold=True)).horizontalAdvance(left)
        if left_w + right_w > g.title.width():
            right, right_w = "", 0.0  # the phase title matters more than the status
        left_rect = QRectF(
            g.title.left(), g.title.top(), g.title.width() - right_w, g.title.height()
        )
        self._text(p, left_rect, left, g.base * 1.25, t.text, bold=True)
        self._text(
            p,
            g.title,
            right,
            g.base,
            t.muted,
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
        )
        caption = self.lesson.phase_text.get(phase, "")
        if step is None:
            caption = "Waiting for the ranks to report this step…"
        self._text(p, g.caption, caption, g.base, t.muted, wrap=True)

    def _paint_data(self, p: QPainter, g: _Geo, rec: RunRecord) -> None:
        t = self.theme
        x = rec.scenario.get("x", [])
        y = rec.scenario.get("y", [])
        owner = {i: r for r, rows in enumerate(rec.shards) for i in rows}
        p.setPen(QPen(qcolor(t.grid), 1))
        p.setBrush(qcolor(t.window))
        p.drawRoundedRect(g.data, 6, 6)
        head = QRectF(g.data.left(), g.data.top() + 4, g.data.width(), g.font_px * 1.6)
        self._text(p, head, "data  (x, y)", g.font_px, t.muted, Qt.AlignmentFlag.AlignCenter)
        rows = len(x)
        shown = min(rows, max(1, int((g.data.height() - head.height() - 8) // (g.font_px * 1.5))))
        row_h = min(g.font_px * 1.9, (g.data.height() - head.height() - 8) / max(shown, 1))
        for i in range(shown):
            r = QRectF(
                g.data.left() + 6, head.bottom() + i * row_h, g.data.width() - 12, row_h * 0.86
            )
            color = t.rank_color(owner.get(i, 0))
            p.setPen(QPen(qcolor(color), 2))
            p.setBrush(qcolor(color, 40))
            p.drawRoundedRect(r, 4, 4)
            self._text(
                p,
                r,
                f"{i + 1}: {fmt(x[i])}, {fmt(y[i])}",
                g.font_px * self.small_ratio,
                t.text,
                Qt.AlignmentFlag.AlignCenter,
                mono=True,
            )
        if shown < rows:
            more = QRectF(g.data.left(), head.bottom() + shown * row_h, g.data.width(), row_h)
            self._text(
                p,
                more,
                f"+{rows - shown} more",
                g.font_px * self.small_ratio,
                t.muted,
                Qt.AlignmentFlag.AlignCenter,
            )
        self._data_row_rects = (head.bottom(), row_h, shown)

    def _lane_cell(self, g: _Geo, lane: QRectF, col: int) -> QRectF:
        pad = g.font_px * 0.3
        return QRectF(
            g.cols[col] + pad, lane.top(), g.cols[col + 1] - g.cols[col] - 2 * pad, lane.height()
        )

    def _paint_lane(
        self, p: QPainter, g: _Geo, rec: RunRecord, step: StepRecord | None, r: int, phase: int
    ) -> None:
        t = self.theme
        lane = g.lanes[r]
        color = t.rank_color(r)
        prog = ease(self.progress)
        p.setPen(QPen(qcolor(color), max(1.5, t.line_px)))
        p.setBrush(qcolor(color, 22))
        p.drawRoundedRect(lane, 6, 6)
        # column 0: who
        c0 = self._lane_cell(g, lane, 0)
        self._marker(p, QPointF(c0.left() + g.font_px * 0.6, lane.center().y()), r, g.font_px)
        label_rect = c0.adjusted(g.font_px * 1.4, 0, 0, 0)
        pid = rec.pids.get(r)
        top_half = QRectF(label_rect.left(), lane.top(), label_rect.width(), lane.height() / 2)
        bottom_half = top_half.translated(0, lane.height() / 2)
        self._text(
            p,
            top_half,
            f"rank {r}",
            g.font_px,
            t.text,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom,
            bold=True,
        )
        self._text(
            p,
            bottom_half,
            f"pid {pid}" if pid else "starting",
            g.font_px * self.small_ratio,
            t.muted,
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
        )
        # column 1: the shard, flying in during phase 0
        c1 = self._lane_cell(g, lane, 1)
        rows = rec.shards[r] if r < len(rec.shards) else []
        chip = QRectF(
            c1.left(), lane.center().y() - g.font_px * self.small_ratio, c1.width(), g.font_px * 1.8
        )
        if phase == 0 and step is not None:
            start_y, row_h, shown = getattr(self, "_data_row_rects", (lane.top(), 0, 0))
            first = rows[0] if rows else 0
            src = QPointF(g.data.center().x(), start_y + min(first, max(shown - 1, 0)) * row_h)
            dst = chip.topLeft()
            chip.moveTopLeft(src + (dst - src) * prog)
        p.setPen(QPen(qcolor(color), 2))
        p.setBrush(qcolor(color, 70))
        p.drawRoundedRect(chip, 5, 5)
        self._text(
            p,
            chip,
            f"rows {rows_label(rows)}",
            g.font_px * self.small_ratio,
            t.text,
            Qt.AlignmentFlag.AlignCenter,
        )
        if step is None:
            return
        rs = step.ranks.get(r)
        # column 2: loss and local gradient
        c2 = self._lane_cell(g, lane, 2)
        if phase >= 1 and rs is not None and rs.local is not None:
            a = prog if phase == 1 else 1.0
            self._grad_cell(p, g, c2, rs.local, color, a, step, f"loss {fmt(rs.loss)}")
        # column 4: averaged gradient (arrives in the second half of the all-reduce)
        c4 = self._lane_cell(g, lane, 4)
        if (
            rs is not None
            and rs.averaged is not None
            and (phase >= 3 or (phase == 2 and self.progress > 0.5))
        ):
            a = ease((self.progress - 0.5) * 2) if phase == 2 else 1.0
            self._grad_cell(p, g, c4, rs.averaged, t.accent, a, step, "averaged")
        # column 5: the optimizer step
        c5 = self._lane_cell(g, lane, 5)
        if phase == 3 and rs is not None and rs.params is not None:
            before = rec.params_before(step.step)
            self._params_cell(p, g, c5, before, rs.params, prog, color)

    def _marker(self, p: QPainter, c: QPointF, r: int, size: float) -> None:
        """Rank markers differ by shape too, so ranks never rely on colour alone."""
        t = self.theme
        s = size * 0.45
        p.setPen(QPen(qcolor(t.text), 1.2))
        p.setBrush(qcolor(t.rank_color(r)))
        shape = t.rank_marker(r)
        if shape == "s":
            p.drawRect(QRectF(c.x() - s, c.y() - s, 2 * s, 2 * s))
        elif shape in ("t", "d", "p", "h", "star", "x"):
            sides = {"t": 3, "d": 4, "p": 5, "h": 6, "star": 10, "x": 8}[shape]
            path = QPainterPath()
            for k in range(sides):
                ang = -math.pi / 2 + 2 * math.pi * k / sides
                rad = s * (0.5 if shape == "star" and k % 2 else 1.15)
                pt = QPointF(c.x() + rad * math.cos(ang), c.y() + rad * math.sin(ang))
                path.moveTo(pt) if k == 0 else path.lineTo(pt)
            path.closeSubpath()
            p.drawPath(path)
        else:
            p.drawEllipse(c, s, s)

    def _scale(self, step: StepRecord) -> float:
        vals = [
            abs(v)
            for rs in step.ranks.values()
            for g in (rs.local, rs.averaged)
            if g
            for vs in g.values()
            for v in vs
            if math.isfinite(v)
        ]
        return max(vals, default=1.0) or 1.0

    def _grad_cell(
        self,
        p: QPainter,
        g: _Geo,
        cell: QRectF,
        grads: dict[str, list[float]],
        color: str,
        amount: float,
        step: StepRecord,
        head: str,
    ) -> None:
        t = self.theme
        rows = [head, *PARAM_NAMES]
        h = cell.height() / len(rows)
        scale = self._scale(step)
        self._text(
            p,
            QRectF(cell.left(), cell.top(), cell.width(), h),
            head,
            g.font_px * self.small_ratio,
            t.muted,
        )
        label_w = getattr(self, "_label_w", g.font_px * 1.6)
        num_w = getattr(self, "_num_w", g.font_px * 3.6)
        for i, name in enumerate(PARAM_NAMES, start=1):
            row = QRectF(cell.left(), cell.top() + i * h, cell.width(), h)
            v = scalar(grads, name)
            self._text(
                p,
                QRectF(row.left(), row.top(), label_w, h),
                f"∇{name[0]}",
                g.font_px * self.small_ratio,
                t.muted,
            )
            bar_area = QRectF(
                row.left() + label_w, row.top() + h * 0.22, row.width() - label_w - num_w, h * 0.56
            )
            frac = min(1.0, abs(v) / scale) if math.isfinite(v) else 0.0
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(qcolor(color, 200))
            p.drawRect(
                QRectF(
                    bar_area.left(),
                    bar_area.top(),
                    max(1.0, bar_area.width() * frac * amount),
                    bar_area.height(),
                )
            )
            num = QRectF(row.right() - num_w, row.top(), num_w, h)
            self._text(
                p,
                num,
                fmt(v * amount if amount < 1 else v),
                g.font_px,
                t.text,
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                mono=True,
            )

    def _params_cell(
        self,
        p: QPainter,
        g: _Geo,
        cell: QRectF,
        before: dict[str, list[float]],
        after: dict[str, list[float]],
        prog: float,
        color: str,
    ) -> None:
        t = self.theme
        h = cell.height() / 3
        self._text(
            p,
            QRectF(cell.left(), cell.top(), cell.width(), h),
            "after step",
            g.font_px * self.small_ratio,
            t.muted,
        )
        for i, name in enumerate(PARAM_NAMES, start=1):
            b, a = scalar(before, name), scalar(after, name)
            now = b + (a - b) * prog
            row = QRectF(cell.left(), cell.top() + i * h, cell.width(), h)
            shown = a if prog >= 1 else now
            font = self._font(g.font_px * self.small_ratio, mono=True)
            text = f"{name[0]} {fmt(b)}→{fmt(shown)}"
            if QFontMetricsF(font).horizontalAdvance(text) > row.width():
                text = f"{name[0]} {fmt(b, 3)}→{fmt(shown, 3)}"  # fewer digits before eliding
            self._text(
                p,
                row,
                text,
                g.font_px * self.small_ratio,
                t.text,
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                mono=True,
            )

    def _paint_hub(
        self, p: QPainter, g: _Geo, rec: RunRecord, step: StepRecord, phase: int
    ) -> None:
        t = self.theme
        active = phase == 2
        done = phase >= 2
        lw = max(2.0, t.line_px * (1.5 if active else 1))
        for r, lane in enumerate(g.lanes):
            color = t.rank_color(r)
            start = QPointF(g.cols[3], lane.center().y())
            end = QPointF(g.cols[4], lane.center().y())
            p.setPen(QPen(qcolor(color, 220 if done else 70), lw))
            p.drawLine(start, g.hub)
            p.setPen(
                QPen(
                    qcolor(t.accent, 220 if (phase > 2 or self.progress > 0.5) and done else 70), lw
                )
            )
            p.drawLine(g.hub, end)
            if active:
                if self.progress <= 0.5:
                    f = ease(self.progress * 2)
                    dot, c = start + (g.hub - start) * f, color
                else:
                    f = ease((self.progress - 0.5) * 2)
                    dot, c = g.hub + (end - g.hub) * f, t.accent
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(qcolor(c))
                p.drawEllipse(dot, g.font_px * 0.45, g.font_px * 0.45)
        p.setPen(QPen(qcolor(t.accent if done else t.grid), lw))
        p.setBrush(qcolor(t.panel))
        p.drawEllipse(g.hub, g.hub_r, g.hub_r)
        inner = QRectF(g.hub.x() - g.hub_r, g.hub.y() - g.hub_r, 2 * g.hub_r, 2 * g.hub_r)
        label = f"Σ ÷ {rec.world_size}"
        px = min(g.font_px * 1.15, g.hub_r * 1.5 / max(1.0, 0.62 * len(label)))
        self._text(
            p,
            inner,
            label,
            px,
            t.text if done else t.muted,
            Qt.AlignmentFlag.AlignCenter,
            bold=True,
        )

    def _paint_footer(
        self, p: QPainter, g: _Geo, rec: RunRecord, step: StepRecord | None, phase: int
    ) -> None:
        t = self.theme
        if rec.status == "failed":
            self._text(
                p, g.footer, f"✗ {rec.reason}", g.font_px * 1.05, t.bad, bold=True, wrap=True
            )
            return
        if step is None:
            return
        half = QRectF(g.footer.left(), g.footer.top(), g.footer.width() * 0.42, g.footer.height())
        rest = QRectF(
            half.right(), g.footer.top(), g.footer.width() - half.width(), g.footer.height()
        )
        if phase == 3 and self.progress >= 0.999:
            agree = step.ranks_agree()
            ok = agree is True
            self._text(
                p,
                half,
                ("✓ all ranks equal" if ok else "✗ ranks differ"),
                g.base * 1.15,
                t.ok if ok else t.bad,
                bold=True,
            )
        else:
            self._text(p, half, "○ all ranks equal", g.base * 1.15, t.muted)
        if phase >= 2 and step.reference is not None:
            same = step.average_is_full_batch()
            ref = step.reference.full_batch_grads
            ref_text = f"reference ∇w {fmt(scalar(ref, 'weight'))}, ∇b {fmt(scalar(ref, 'bias'))}"
            if same:
                line = f"✓ average = full batch ({ref_text})"
            else:
                line = f"✗ average ≠ full batch ({ref_text}): " + uneven_note(
                    step.reference.shard_sizes
                )
            self._text(p, rest, line, g.base * self.small_ratio, t.ok if same else t.bad, wrap=True)

    # Exposed for tests: what the stage is showing right now, as text.
    def visible_numbers(self) -> dict[str, float]:
        rec = self.record
        if rec is None or self.cursor.step >= len(rec.steps):
            return {}
        step = rec.steps[self.cursor.step]
        out: dict[str, float] = {}
        for r, rs in step.ranks.items():
            if self.cursor.phase >= 1 and rs.local:
                for n in PARAM_NAMES:
                    out[f"rank{r}.local.{n}"] = scalar(rs.local, n)
            if self.cursor.phase >= 2 and rs.averaged:
                for n in PARAM_NAMES:
                    out[f"rank{r}.averaged.{n}"] = scalar(rs.averaged, n)
            if self.cursor.phase >= 3 and rs.params:
                for n in PARAM_NAMES:
                    out[f"rank{r}.params.{n}"] = scalar(rs.params, n)
        return out
