"""Pens shared by the plots: a dash style per parameter, markers only on short runs."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

MARKERS_UP_TO = 60  # steps; longer runs draw lines without markers (they would hide the lines)
DASHES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)


def pen(color: str, width: float, dash: bool | int = False) -> pg.mkPen:
    return pg.mkPen(color=color, width=width, style=DASHES[int(dash) % len(DASHES)])
