"""A rank's marker has one shape on the stage and in the plots (rendered, offscreen)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPainter


def _marker(window, shape: str, size: int = 40) -> QImage:
    img = QImage(size, size, QImage.Format.Format_ARGB32)
    img.fill(Qt.GlobalColor.white)
    p = QPainter(img)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor("black"))
    window.stage._draw_marker(p, QRectF(0, 0, size, size), shape)
    p.end()
    return img


def _inked(img: QImage, y: int) -> int:
    return sum(img.pixelColor(x, y).value() < 128 for x in range(img.width()))


def test_the_triangle_points_down_as_the_plots_draw_it(qtbot, window) -> None:
    """pyqtgraph's "t" points down; the stage drew it pointing up."""
    img = _marker(window, "t")
    assert _inked(img, 8) > 3 * max(1, _inked(img, 32))


@pytest.mark.parametrize("shape", ["o", "s", "t", "d", "star", "h", "p", "x"])
def test_every_theme_marker_is_pyqtgraph_s_own_symbol(qtbot, window, shape) -> None:
    from pyqtgraph.graphicsItems.ScatterPlotItem import Symbols
    from PySide6.QtGui import QTransform

    want = QImage(40, 40, QImage.Format.Format_ARGB32)
    want.fill(Qt.GlobalColor.white)
    p = QPainter(want)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor("black"))
    p.drawPath(QTransform().translate(20, 20).scale(40, 40).map(Symbols[shape]))
    p.end()
    assert _marker(window, shape) == want
    assert shape in window.theme.markers
