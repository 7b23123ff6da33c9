"""How the plots look: titles, axis labels and fonts, in the theme's colours and sizes, and the
titles a page shows before its run (a kind's own, once the page says it expects one)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6.QtWidgets import QGraphicsItem

from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import RunRecord

if TYPE_CHECKING:
    from types import ModuleType

LESSON_LOSS = ("Loss per rank<br>(dashed +: full batch)", "loss")  # two lines fit at 1280 px
LESSON_PARAMS = ("Parameters", "value")
LESSON_WAITING = "appears after Run"


class StyleMixin:
    """For ``Plots``: ``expected`` is the kind whose run the page waits for (its Qt part's
    ``CURVES``), None on a lesson's page."""

    theme: Theme
    loss_plot: pg.PlotWidget
    param_plot: pg.PlotWidget
    surface_plot: pg.PlotWidget
    expected: ModuleType | None

    @property
    def text_px(self) -> int:
        """Plot text: the theme's size on a projector, a little smaller otherwise."""
        t = self.theme
        return t.font_px if t.name == "projector" else max(10, round(t.font_px * 0.9))

    def waiting_words(self) -> str:
        """What an empty plot says about where its curves will come from."""
        return getattr(self.expected, "WAITING", LESSON_WAITING)

    def _titles(self) -> tuple[tuple[str, str], tuple[str, str]]:
        """(title, left axis label) of the loss plot and of the parameter plot, before a run."""
        own = self.expected
        if own is None:
            return LESSON_LOSS, LESSON_PARAMS
        return (own.LOSS_TITLE, own.LOSS_LABEL), (
            own.title(RunRecord()),
            getattr(own, "VALUE_LABEL", "value"),
        )

    def _set_title(self, w: pg.PlotWidget, html: str) -> None:
        """pyqtgraph gives a title a 30 px row whatever its size: a two-line title in
        projector type lost its top line. The row fits the title's lines. The same title
        again changes nothing: setting it re-lays the whole plot (a full repaint as a run
        starts, on a page that already showed its kind's titles)."""
        shown: dict[pg.PlotWidget, tuple] = self.__dict__.setdefault("_title_shown", {})
        key = (html, self.theme.text, self.text_px)
        if shown.get(w) == key:
            return
        shown[w] = key
        w.setTitle(html, color=self.theme.text, size=f"{self.text_px}px")
        item = w.getPlotItem()
        height = max(30, round(item.titleLabel.item.boundingRect().height()) + 4)
        item.titleLabel.setMaximumHeight(height)
        item.layout.setRowFixedHeight(0, height)

    def _set_axis_label(self, axis: pg.AxisItem, text: str) -> None:
        """An axis's label in the theme's type; the same label again changes nothing (setting
        it lays the axis out and draws it again)."""
        style = {"color": self.theme.text, "font-size": f"{self.text_px}px"}
        if axis.labelText != text or axis.labelStyle != style:
            axis.setLabel(text, **style)

    def _style(self) -> None:
        t = self.theme
        font_px = self.text_px
        (loss_title, loss_label), (param_title, param_label) = self._titles()
        for w, title, left, bottom in (
            (self.loss_plot, loss_title, loss_label, "step"),
            (self.param_plot, param_title, param_label, "after step (0: start)"),
            (self.surface_plot, "Loss surface", "", ""),  # axes named by the run's parameters
        ):
            w.setBackground(t.panel)
            self._set_title(w, title)
            for side, text in (("left", left), ("bottom", bottom)):
                axis = w.getPlotItem().getAxis(side)
                self._set_axis_label(axis, text)
                axis.setPen(pg.mkPen(t.text, width=max(1, t.line_px // 2)))
                axis.setTextPen(pg.mkPen(t.text))
                f = axis.label.font()
                f.setPixelSize(font_px)
                axis.setTickFont(f)
                # pyqtgraph still works out a prefix when the prefix is switched off, from the
                # range the axis has then: a loss of 0.1-0.5 got "milli" and ticks 1000x the
                # values, kept for good. No range gets a prefix, and none is ever used.
                axis.setSIPrefixEnableRanges(())
                axis.enableAutoSIPrefix(False)
                # pyqtgraph replays an axis's QPicture on every repaint of its plot, ~4 ms
                # each, most of the repaint; kept as a pixmap, it is drawn again only when
                # its range, ticks or style change
                axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            w.showGrid(x=True, y=True, alpha=0.25)
            w.getPlotItem().layout.setContentsMargins(2, 2, t.font_px, 2)
