"""Curves made ahead of a run and kept between runs, so a run's first seconds make none.

A pyqtgraph curve costs about 2 ms to make on a quiet machine (the item, its pens, the plot's
bookkeeping and signal connections) and about 0.08 ms to restyle. A page that knows a run is
coming (a kind's page, while its command's ranks start: ``Plots.expect``) asks for spares
(:meth:`CurvePool.keep`); they are made one per tick while no run is on the page, hidden and
empty in their plot. A new run takes them, restyled, and gives them back when it is cleared.
"""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import QObject, QTimer

FILL_EVERY_MS = 16
MAX_SPARE = 48  # per plot: curves given back beyond this are removed
# every style option a curve of the plots may be given, at pyqtgraph's PlotDataItem defaults
# (antialias: the configured one): a taken spare gets all of them, so nothing of the run that
# used it last (a marker, a symbol pen) stays on it. Written out, not read from a throwaway
# PlotDataItem: one made and dropped per window left its child items to the cyclic collector,
# which freed them at some later event (a window test's worker crashed in processEvents)
_STYLE = {
    "pen": (200, 200, 200),
    "symbol": None,
    "symbolSize": 10,
    "symbolPen": (200, 200, 200),
    "symbolBrush": (50, 50, 150),
}


class CurvePool(QObject):
    def __init__(
        self, plots: list[pg.PlotWidget], idle: Callable[[], bool], parent: QObject
    ) -> None:
        super().__init__(parent)
        self._spare: dict[pg.PlotWidget, list[pg.PlotDataItem]] = {w: [] for w in plots}
        self._idle = idle  # no run on the page: the only time spares are made
        self._want = 0
        self._timer = QTimer(self, interval=FILL_EVERY_MS)
        self._timer.timeout.connect(self._on_timer_timeout)

    def keep(self, per_plot: int) -> None:
        """Have ``per_plot`` spare curves in each plot, made while no run is on the page."""
        self._want = per_plot
        if self._short():
            self._timer.start()

    def spare(self, plot: pg.PlotWidget) -> int:
        return len(self._spare[plot])

    def take(self, plot: pg.PlotWidget, opts: dict) -> pg.PlotDataItem | None:
        """A spare curve of ``plot`` styled with ``opts`` and shown, or None if there is none."""
        spare = self._spare[plot]
        if not spare:
            return None
        curve = spare.pop()
        style = {**_STYLE, "antialias": pg.getConfigOption("antialias"), **opts}
        curve.setData([], [], **style)
        curve.show()
        return curve

    def clear(self, plot: pg.PlotWidget) -> None:
        """Empty ``plot`` as ``PlotWidget.clear`` does, its curves kept as spares on a page
        that keeps some (a lesson's page keeps none: it takes its plots' items out)."""
        item = plot.getPlotItem()
        spare = self._spare[plot]
        if not self._want:
            spare.clear()
            plot.clear()
            return
        for thing in item.items[:]:
            if isinstance(thing, pg.PlotDataItem) and len(spare) < MAX_SPARE:
                if thing not in spare:
                    thing.hide()
                    thing.setData([], [])
                    spare.append(thing)
            else:
                item.removeItem(thing)

    def _short(self) -> list[pg.PlotWidget]:
        return [w for w, s in self._spare.items() if len(s) < self._want]

    def _on_timer_timeout(self) -> None:
        short = self._short()
        if short and self._idle():
            plot = min(short, key=lambda w: len(self._spare[w]))
            curve = plot.plot([], [])
            curve.hide()
            self._spare[plot].append(curve)
        if not self._short() or not self._idle():
            self._timer.stop()  # full, or a run came: it takes what there is
