"""How a run's plots' axes follow it: whole steps on a short x axis, an x range that grows
in jumps (plot_math.x_extent), a y range that grows only when data leaves it."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFontMetricsF

# tick labels a streaming axis makes room for from the start ("150" ms, a norm of "0.0125")
RESERVED_TICK = "-0.0000"


class RangeMixin:
    """For ``Plots``: ``_y_range`` holds each streaming plot's y range (None: not set yet)."""

    loss_plot: pg.PlotWidget
    param_plot: pg.PlotWidget
    _y_range: dict[pg.PlotWidget, tuple[float, float] | None]

    def _on_x_range_changed(self, view: pg.ViewBox, x_range: tuple[float, float]) -> None:
        """Steps are whole: a short view ticks every step (one ticked 1.5 and 2.5); a wider one
        (a long run, or a short one zoomed out) gets pyqtgraph's own spacing, since a tick per
        step over thousands of steps froze the window."""
        short = x_range[1] - x_range[0] <= 12
        view.parentItem().getAxis("bottom").setTickSpacing(levels=[(1.0, 0)] if short else None)

    def _show_steps(self, last: int) -> None:
        if last != getattr(self, "_x_shown", 0):
            self._x_shown = last
            self.loss_plot.setXRange(0.7, last + 0.3, padding=0.02)
            self.param_plot.setXRange(-0.3, last + 0.3, padding=0.02)

    def _expand_y(self, plot: pg.PlotWidget, lo: float, hi: float) -> None:
        """Long runs: grow the y range only when data leaves it. Autorange would re-lay the
        axis on every redraw while the loss falls, the costliest part of a streaming frame."""
        shown = self._y_range[plot]
        if shown is not None and shown[0] <= lo and hi <= shown[1]:
            return
        pad = 0.08 * max(hi - lo, abs(hi), 1e-9)
        if shown is not None:  # data left it: the side it left by takes half as much again,
            grow = pad + 0.5 * (max(hi, shown[1]) - min(lo, shown[0]))  # so it moves rarely
            lo = shown[0] if lo >= shown[0] else lo - grow
            hi = shown[1] if hi <= shown[1] else hi + grow
        else:
            lo, hi = lo - pad, hi + pad
        self._y_range[plot] = (lo, hi)
        plot.setYRange(lo, hi, padding=0)

    def _hold_axis_width(self, plot: pg.PlotWidget, streaming: bool) -> None:
        """A streaming plot's left axis keeps its width: room for ``RESERVED_TICK`` from the
        start, growing if a label needs more and never shrinking. A width that followed the
        labels re-laid the whole plot when its range moved (a second full repaint, 7-10 ms
        beside 8 ranks on 2 cores); a finished run's axis fits its labels again."""
        axis = plot.getPlotItem().getAxis("left")
        width = axis.textWidth
        if streaming:
            font = axis.style["tickFont"] or axis.font()
            width = max(width, QFontMetricsF(font).horizontalAdvance(RESERVED_TICK))
        if width != axis.textWidth or axis.style["autoReduceTextSpace"] == streaming:
            axis.textWidth = width
            axis.setStyle(autoReduceTextSpace=not streaming)  # pyqtgraph re-lays the axis
