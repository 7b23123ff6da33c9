"""A left axis whose labelled ticks never pile up: pyqtgraph always labels its major ticks,
spaced by the axis's length alone, so projector type (28 px lines) on a 93 px axis piled
"0.2 0.4 0.6 0.8" on each other. The major spacing grows (1, 2, 5 × 10^k) until the labels lie
a line and a half apart; ticks set by hand (a diverging run's symmetric-log "1e12 … 1e72")
are thinned to every k-th when drawn, at the axis's size then."""

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
    ticks: list[tuple[float, str]], lo: float, hi: float, most: int
) -> list[tuple[float, str]]:
    """At most about ``most`` of ``ticks`` between ``lo`` and ``hi``: 0, and on each side of it
    every k-th counted in from the largest (kept), k as small as that allows."""
    shown = [t for t in ticks if lo <= t[0] <= hi]
    k = max(1, math.ceil(len(shown) / max(1, most)))
    if k == 1:
        return ticks
    kept = [t for t in ticks if t[0] == 0]
    for side in (1, -1):
        out = sorted((t for t in ticks if t[0] * side > 0), key=lambda t: abs(t[0]))
        kept += [t for i, t in enumerate(out) if (len(out) - 1 - i) % k == 0]
    return kept


class ReadableAxis(pg.AxisItem):
    # the plots' words for this axis, chosen again when it is resized (a symmetric-log label
    # picks the longest wording its height holds)
    relabel: Callable[[], None] | None = None

    def resizeEvent(self, ev: object = None) -> None:  # pyqtgraph names it
        super().resizeEvent(ev)
        if self.relabel is not None:
            self.relabel()

    def labels_fit(self) -> int:
        """How many tick labels the axis holds a line and a half apart."""
        font = self.style["tickFont"] or self.font()
        return max(2, int(self.geometry().height() / (QFontMetricsF(font).height() * APART)))

    def generateDrawSpecs(self, p):  # pyqtgraph names it
        full = self._tickLevels
        if full and self.orientation in ("left", "right"):
            lo, hi = sorted(self.range)
            self._tickLevels = [thin(list(level), lo, hi, self.labels_fit()) for level in full]
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
