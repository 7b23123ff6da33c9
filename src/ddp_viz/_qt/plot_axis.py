"""A left axis whose labelled ticks never pile up: pyqtgraph always labels its major ticks,
spaced by the axis's length alone, so projector type (28 px lines) on a 93 px axis piled
"0.2 0.4 0.6 0.8" on each other. The major spacing grows (1, 2, 5 × 10^k) until the labels lie
a line and a half apart; ticks set by hand (a diverging run's symmetric-log "1e12 … 1e72")
are thinned by the same distance when drawn, at the axis's size then."""

from __future__ import annotations

import math
from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtGui import QFontMetricsF

APART = 1.5  # lines of tick text between two labelled ticks, at least


def wider(spacing: float) -> float:
    """The next of 1, 2, 5 × 10^k after ``spacing``."""
    exp = math.floor(math.log10(spacing))
    mantissa = round(spacing / 10**exp, 6)
    for m in (1, 2, 5):
        if mantissa < m:
            return m * 10**exp
    return 10 ** (exp + 1)


def thin(
    ticks: list[tuple[float, str]], lo: float, hi: float, apart: float
) -> list[tuple[float, str]]:
    """The labelled ticks of ``ticks`` between ``lo`` and ``hi`` that lie at least ``apart``
    from each other (in the axis's own units): 0, and on each side of it the largest, then
    inward each one far enough from the last one kept and from 0. By distance, not by count:
    a symmetric-log axis's ticks are not evenly spaced, and every other one of "1e36 1e12 0"
    still piled "1e12" on "0"."""
    shown = [t for t in ticks if lo <= t[0] <= hi]
    zero = [t for t in shown if t[0] == 0]
    kept = list(zero)
    for side in (1, -1):
        last: float | None = None
        for t in sorted((t for t in shown if t[0] * side > 0), key=lambda t: -abs(t[0])):
            if last is not None and abs(last - t[0]) < apart:
                continue
            if zero and abs(t[0]) < apart:
                continue
            kept.append(t)
            last = t[0]
    return kept


class ReadableAxis(pg.AxisItem):
    # the plots' words for this axis, chosen again when it is resized (a symmetric-log label
    # picks the longest wording its height holds)
    relabel: Callable[[], None] | None = None

    def resizeEvent(self, ev: object = None) -> None:  # pyqtgraph names it
        super().resizeEvent(ev)
        if self.relabel is not None:
            self.relabel()

    def label_apart(self) -> float:
        """The least distance between two labelled ticks, in the axis's units: a line and a
        half of tick text at the axis's length now."""
        font = self.style["tickFont"] or self.font()
        lo, hi = sorted(self.range)
        pixels = max(1.0, self.geometry().height())
        return QFontMetricsF(font).height() * APART * (hi - lo) / pixels

    def generateDrawSpecs(self, p):  # pyqtgraph names it
        full = self._tickLevels
        if full and self.orientation in ("left", "right"):
            lo, hi = sorted(self.range)
            apart = self.label_apart()
            self._tickLevels = [thin(list(level), lo, hi, apart) for level in full]
        try:
            return super().generateDrawSpecs(p)
        finally:
            self._tickLevels = full

    def tickSpacing(self, minVal: float, maxVal: float, size: float):  # pyqtgraph names it
        levels = super().tickSpacing(minVal, maxVal, size)
        if self._tickSpacing is not None or not levels or self.orientation not in ("left", "right"):
            return levels
        font = self.style["tickFont"] or self.font()
        most = max(1.0, size / (QFontMetricsF(font).height() * APART))  # intervals that fit
        span, spacing = abs(maxVal - minVal), levels[0][0]
        if span / spacing <= most:
            return levels
        while span / spacing > most:
            spacing = wider(spacing)
        return [(spacing, 0.0)]  # the major ticks only: the minor ones were the pile
