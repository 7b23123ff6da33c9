"""A kind's curves (a watched run's, one per rank and the average's): plain lines, all of a
plot's in one pyqtgraph item.

A pyqtgraph curve (``PlotDataItem``) keeps its own bookkeeping: each data push works out its
bounds, each repaint asks for its bounding rectangle a few times and its pixel padding again,
and making one costs ~2 ms (~7 beside 8 ranks). The watched page's 17 curves were most of a
streaming frame's work beside 8 ranks on 2 cores, where a window's thread is scheduled late
after any slice longer than a few ms (docs/benchmarks.md). These lines have no markers and no
antialiasing; a line is a pen and its points, its path made once per push, the item's bounds
once per push and once per view change.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainter, QPainterPath, QPen

# A line with more points is drawn from its peaks: each of MOST // 2 runs of points keeps
# its least and its greatest value, so a spike stays on screen however long the run. A plot is
# at most ~2000 pixels wide; a 100,000-step curve drawn point by point cost ~2 ms a line.
MOST = 4096
_PAD_PX = 4  # the bounds' margin: a pen up to this wide is drawn whole at the plot's edges


def peaks(x: np.ndarray, y: np.ndarray, most: int = MOST) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` with at most ``most`` points: each run of points keeps its least and
    greatest ``y`` (x ascending). A run of NaN only stays NaN (a gap in the line)."""
    n = len(x)
    if n <= most:
        return x, y
    size = -(-n // (most // 2))  # points per run (ceil)
    runs = -(-n // size)  # the last one may be shorter: padded with NaN, ignored
    pad = runs * size - n
    xs = np.concatenate([x, np.full(pad, x[-1])]).reshape(runs, size)
    ys = np.concatenate([y, np.full(pad, np.nan)]).reshape(runs, size)
    with warnings.catch_warnings():  # a run of NaN only: a gap in the line, not a fault
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanmin(ys, axis=1), np.nanmax(ys, axis=1)
    out_x = np.repeat(xs[:, 0], 2)
    out_x[1::2] = xs[:, -1]
    out_y = np.empty(2 * runs)
    out_y[0::2], out_y[1::2] = lo, hi
    return out_x, out_y


class Line:
    """One line of a :class:`Lines` item, used as the plots use a curve (``setData``,
    ``getData``)."""

    def __init__(self, owner: Lines, pen: QPen) -> None:
        self._owner = owner
        self.pen = pen
        self._x = self._y = np.zeros(0)
        self.path = QPainterPath()
        self.bounds: tuple[float, float, float, float] | None = None  # x0, x1, y0, y1

    def setData(self, x: np.ndarray, y: np.ndarray) -> None:
        self._x, self._y = np.asarray(x, float), np.asarray(y, float)
        finite = np.isfinite(self._x) & np.isfinite(self._y)
        if finite.any():
            fx, fy = self._x[finite], self._y[finite]
            self.bounds = (float(fx.min()), float(fx.max()), float(fy.min()), float(fy.max()))
        else:
            self.bounds = None
        px, py = peaks(self._x, self._y)
        self.path = pg.arrayToQPath(px, py, connect="finite") if len(px) else QPainterPath()
        self._owner.changed()

    def getData(self) -> tuple[np.ndarray, np.ndarray]:
        return self._x, self._y


class Lines(pg.GraphicsObject):
    """A plot's lines, one item: added to a plot once per run (``PlotWidget.addItem``)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[Line] = []
        self._rect: QRectF | None = None

    def line(self, pen: QPen) -> Line:
        made = Line(self, pen)
        self.lines.append(made)
        return made

    def changed(self) -> None:
        self.prepareGeometryChange()
        self._rect = None
        self.informViewBoundsChanged()
        self.update()

    def _data_rect(self) -> tuple[float, float, float, float] | None:
        known = [ln.bounds for ln in self.lines if ln.bounds is not None]
        if not known:
            return None
        x0, x1, y0, y1 = zip(*known, strict=True)
        return min(x0), max(x1), min(y0), max(y1)

    def dataBounds(  # autorange asks for it
        self, ax: int, frac: float = 1.0, orthoRange: tuple[float, float] | None = None
    ) -> tuple[float | None, float | None]:
        rect = self._data_rect()
        if rect is None:
            return None, None
        return (rect[0], rect[1]) if ax == 0 else (rect[2], rect[3])

    def viewTransformChanged(self) -> None:  # pyqtgraph calls it: the margin in data units changed
        super().viewTransformChanged()
        self.prepareGeometryChange()
        self._rect = None

    def boundingRect(self) -> QRectF:
        if self._rect is None:
            rect = self._data_rect()
            if rect is None:
                self._rect = QRectF()
                return self._rect
            x0, x1, y0, y1 = rect
            px, py = self.pixelVectors()  # one pixel, in data units (None before a view)
            dx = abs(px.x()) * _PAD_PX if px is not None else 0.0
            dy = abs(py.y()) * _PAD_PX if py is not None else 0.0
            self._rect = QRectF(QPointF(x0 - dx, y0 - dy), QPointF(x1 + dx, y1 + dy))
        return self._rect

    def paint(self, p: QPainter, *args: object) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        for ln in self.lines:
            if ln.bounds is not None:
                p.setPen(ln.pen)
                p.drawPath(ln.path)
