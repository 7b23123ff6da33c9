"""A plot's lines in one item (``_qt/plot_lines``): what they draw, their bounds, and a long
curve drawn from its peaks."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor

from ddp_viz._qt.plot_lines import MOST, Lines, peaks


def test_peaks_keep_every_spike_of_a_long_curve() -> None:
    n = 100_000
    x = np.arange(n, dtype=float)
    y = np.zeros(n)
    y[12_345], y[67_890] = 50.0, -7.0  # one step each: a straggler's spike, a dip
    px, py = peaks(x, y)
    assert len(px) <= MOST and len(py) == len(px)
    assert py.max() == 50.0 and py.min() == -7.0
    assert px[0] == 0 and px[-1] == n - 1  # it still spans the run
    assert np.all(np.diff(px) >= 0)


def test_a_short_curve_is_drawn_point_by_point() -> None:
    x, y = np.arange(5.0), np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    px, py = peaks(x, y)
    assert px is x and py is y


def test_a_stretch_of_nan_stays_a_gap() -> None:
    n = 10 * MOST
    y = np.ones(n)
    y[: n // 2] = np.nan  # no value for the first half (steps not captured)
    _, py = peaks(np.arange(float(n)), y)
    half = len(py) // 2
    assert np.isnan(py[: half - 2]).all() and (py[half + 2 :] == 1.0).all()


def test_the_items_bounds_are_its_lines_finite_points(qtbot) -> None:
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(300, 200)
    plot.show()  # a pixel's size in data units: the pens' margin
    qtbot.waitExposed(plot)
    lines = Lines()
    plot.addItem(lines)
    a, b = lines.line(pg.mkPen("r")), lines.line(pg.mkPen("b"))
    assert lines.dataBounds(0) == (None, None) and lines.boundingRect().isEmpty()
    a.setData([1, 2, 3], [5.0, np.inf, -1.0])
    b.setData([2, 9], [np.nan, 0.5])
    assert lines.dataBounds(0) == (1.0, 9.0)
    assert lines.dataBounds(1) == (-1.0, 5.0)
    plot.setRange(xRange=(0, 10), yRange=(-2, 6), padding=0)
    rect = lines.boundingRect()  # with a margin for the pens' width: a few pixels
    assert 0.9 < rect.left() < 1.0 and 9.0 < rect.right() < 9.1
    assert -1.2 < rect.top() < -1.0 and 5.0 < rect.bottom() < 5.2
    assert list(a.getData()[0]) == [1, 2, 3]
    plot.enableAutoRange()  # a finished run's plot fits its lines
    plot.getPlotItem().getViewBox().updateAutoRange()
    (x0, x1), (y0, y1) = plot.getPlotItem().getViewBox().viewRange()
    assert x0 <= 1.0 <= 9.0 <= x1 and y0 <= -1.0 <= 5.0 <= y1


def test_each_line_is_drawn_in_its_pen(qtbot) -> None:
    plot = pg.PlotWidget(background="w")
    qtbot.addWidget(plot)
    plot.resize(300, 200)
    lines = Lines()
    plot.addItem(lines)
    lines.line(pg.mkPen("#ff0000", width=3)).setData([0, 10], [0.0, 0.0])
    lines.line(pg.mkPen("#0000ff", width=3)).setData([0, 10], [1.0, 1.0])
    gap = lines.line(pg.mkPen("#00ff00", width=3))
    gap.setData([0, 10], [np.nan, np.nan])  # no point to draw: nothing green
    plot.setRange(xRange=(0, 10), yRange=(-1, 2), padding=0)
    image = plot.grab().toImage()
    w, h = image.width(), image.height()
    colours = {QColor(image.pixel(x, y)).name() for x in range(w) for y in range(h)}
    assert "#ff0000" in colours and "#0000ff" in colours and "#00ff00" not in colours


def test_a_symmetric_log_axis_label_fits_up_its_axis(qtbot) -> None:
    """Issue 47, 4: on a laptop the loss axis read "loss (symmetric lo": the label runs up
    the plot's height, so a short axis gets the short words."""
    import pyqtgraph as pg
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QFont, QFontMetrics

    from ddp_viz._qt.plots import symlog_label

    axis = pg.AxisItem("left")
    font = QFont(axis.label.font())
    font.setPixelSize(14)
    long_w = QFontMetrics(font).horizontalAdvance("loss (symmetric log)")
    axis.setGeometry(QRectF(0, 0, 40, long_w - 10))
    assert symlog_label(axis, "loss", 14) == "loss (symlog)"
    axis.setGeometry(QRectF(0, 0, 40, long_w + 20))
    assert symlog_label(axis, "loss", 14) == "loss (symmetric log)"
