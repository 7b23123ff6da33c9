"""The parameter plot's legend: a row of its own under the plot, for a few parameters only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyqtgraph as pg

if TYPE_CHECKING:
    from ddp_viz.model.theme import Theme
    from ddp_viz.model.timeline import RunRecord

LEGEND_UP_TO = 12  # parameters: six rows of two names at most under the plot


class LegendMixin:
    """For ``Plots``: adds and removes the legend of ``param_plot``."""

    param_plot: pg.PlotWidget
    theme: Theme
    text_px: int

    def _drop_param_legend(self) -> None:
        """Take the legend's row out of the plot's layout, so the plot gets its height back."""
        item = self.param_plot.getPlotItem()
        old = item.legend
        if old is not None:
            old.clear()
            item.layout.removeItem(old)
            old.setParentItem(None)
            if old.scene() is not None:
                old.scene().removeItem(old)
            item.legend = None

    def _param_legend(self, record: RunRecord) -> pg.LegendItem | None:
        """A few parameters: a legend naming each line style, in its own row below the plot,
        so it never covers the lines (inside the plot it hid the biggest norms). None for one
        or two, which the title names, and for more than ``LEGEND_UP_TO``, whose rows would
        squeeze the plot away (a watched ResNet has 62): the title counts them and the tooltip
        names them."""
        self._drop_param_legend()
        # projector type: two rows of names at most, or the legend takes half the plot
        up_to = 4 if self.theme.name == "projector" else LEGEND_UP_TO
        if not 2 < len(record.params) <= up_to:
            return None
        item = self.param_plot.getPlotItem()
        legend = pg.LegendItem(
            labelTextColor=self.theme.text,
            labelTextSize=f"{self.text_px}px",
            colCount=2,  # fewer rows: the plot keeps its height
            frame=False,
        )
        item.layout.addItem(legend, 4, 1)  # below the bottom axis and its label
        item.legend = legend  # curves plotted with a name join it
        return legend
