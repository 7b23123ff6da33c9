"""The loss surface of the one-weight model: the full-batch loss over (weight, bias), each
rank's local step and the averaged step DDP takes. Computed by the window from the data, and
labelled as such: a reference picture, not something the ranks sent."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ddp_viz._qt.pens import MARKERS_UP_TO
from ddp_viz._qt.pens import pen as _pen
from ddp_viz._qt.plot_math import full_batch_loss_grid, has_surface
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import Cursor, RunRecord, scalar


class SurfaceMixin:
    """Part of :class:`ddp_viz._qt.plots.Plots` (which owns the widgets used here)."""

    theme: Theme
    text_px: int
    surface_plot: pg.PlotWidget

    # --- surface -----------------------------------------------------------------------------
    def _build_surface(self, record: RunRecord) -> None:
        plot = self.surface_plot
        plot.clear()
        self._arrows = []
        self._arrow_step = -1
        self._surface_ready = False
        x, y = record.scenario.get("x", []), record.scenario.get("y", [])
        self.surface_plot.setVisible(has_surface(record))
        if not x or not has_surface(record):
            note = (
                "The loss surface is drawn for the one-weight model only; this model has "
                f"{sum(p.numel for p in record.params):,} parameters."
            )
            # a user's script's model and data are its own: no surface, nothing to excuse
            self.surface_note.setText("" if record.foreign_model else note)
            return
        A = np.vstack([np.asarray(x, float), np.ones(len(x))]).T
        (w_opt, b_opt), *_ = np.linalg.lstsq(A, np.asarray(y, float), rcond=None)
        start = record.initial_params()
        a, b = record.param_names[:2]
        w0, b0 = scalar(start, a), scalar(start, b)
        axes = self.surface_plot.getPlotItem()
        px = {"font-size": f"{self.text_px}px"}
        axes.getAxis("bottom").setLabel(a, color=self.theme.text, **px)
        axes.getAxis("left").setLabel(b, color=self.theme.text, **px)
        span_w = max(abs(w_opt - w0), 0.5) * 1.4
        span_b = max(abs(b_opt - b0), 0.5) * 1.4
        cw, cb = (w0 + w_opt) / 2, (b0 + b_opt) / 2
        ws = np.linspace(cw - span_w, cw + span_w, 120)
        bs = np.linspace(cb - span_b, cb + span_b, 120)
        grid = full_batch_loss_grid(x, y, ws, bs)
        image = pg.ImageItem(np.log1p(grid))
        cmap = pg.colormap.get("CET-L2" if not self.theme.dark else "CET-L1")
        image.setLookupTable(cmap.getLookupTable(alpha=False))
        image.setRect(ws[0], bs[0], ws[-1] - ws[0], bs[-1] - bs[0])
        image.setOpacity(0.45)
        plot.addItem(image)
        levels = np.quantile(grid, [0.02, 0.06, 0.15, 0.3, 0.5, 0.75])
        for lvl in levels:
            iso = pg.IsocurveItem(data=grid, level=float(lvl), pen=_pen(self.theme.muted, 1))
            iso.setParentItem(image)
        plot.setXRange(ws[0], ws[-1], padding=0)
        plot.setYRange(bs[0], bs[-1], padding=0)
        t = self.theme
        self._surface_ready = True
        self._path = plot.plot(
            [],
            [],
            pen=_pen(t.text, t.line_px),
            symbol="o" if record.steps_planned <= MARKERS_UP_TO else None,
            symbolSize=max(5, t.font_px * 0.4),
            symbolBrush=t.text,
        )
        plot.plot(
            [w_opt],
            [b_opt],
            pen=None,
            symbol="+",
            symbolSize=t.font_px,
            symbolPen=_pen(t.ok, t.line_px),
        )
        for r in range(record.world_size):
            self._arrows.append(plot.plot([], [], pen=_pen(t.rank_color(r), t.line_px)))
        self._arrows.append(plot.plot([], [], pen=_pen(t.accent, t.line_px + 2)))
        self.surface_note.setText(
            "Computed by the window from the data (a reference, not the ranks). Thin arrows: each "
            "rank's local step −lr·∇; thick: the averaged step DDP takes. + marks the minimum."
        )

    def show_step(self, record: RunRecord, cursor: Cursor) -> None:
        """Point the surface's arrows at the step the stage shows (only when it changes)."""
        if record is self.record and cursor.step != self._arrow_step:
            self._update_surface(record, cursor)

    def _update_surface(self, record: RunRecord, cursor: Cursor | None) -> None:
        if not self._arrows:
            return
        lr = float(record.scenario.get("lr", 0.0))
        step_i = cursor.step if cursor is not None else len(record.steps) - 1
        if not (0 <= step_i < len(record.steps)) or step_i == self._arrow_step:
            return
        if not record.steps[step_i].complete(record.world_size):
            return
        self._arrow_step = step_i
        st = record.steps[step_i]
        start = record.params_before(step_i)
        # a long run's step with no gradients recorded, or the step after one (where it
        # starts from was not recorded): no arrows
        if not st.has_values or not start:
            for curve in self._arrows:
                curve.setData([], [])
            return
        a, b = record.param_names
        w0, b0 = scalar(start, a), scalar(start, b)

        def arrow(curve: pg.PlotDataItem, g: dict | None) -> None:
            if g is None:
                curve.setData([], [])
            else:
                curve.setData([w0, w0 - lr * scalar(g, a)], [b0, b0 - lr * scalar(g, b)])

        for r in range(record.world_size):
            rs = st.ranks.get(r)
            arrow(self._arrows[r], rs.local if rs is not None else None)
        arrow(self._arrows[-1], st.averaged())
