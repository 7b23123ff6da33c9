"""The parameter plot's legend: a row of its own under the plot, for a few tensors only."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyqtgraph as pg

from ddp_viz._qt.pens import pen
from ddp_viz._qt.plot_math import by_tensor

if TYPE_CHECKING:
    from ddp_viz.model.theme import Theme
    from ddp_viz.model.timeline import RunRecord

LEGEND_UP_TO = 12  # parameters: six rows of two names at most under the plot
PROJECTOR_UP_TO = 8  # in projector type: two rows of four short names


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
        """A legend naming each tensor by its colour (a line, no marker: a marker is a
        rank's, and eight of the same marker named nothing), in its own row below the plot,
        so it never covers the lines (inside the plot it hid the biggest norms). None for one
        or two parameters, which the title names by dash, and for more than fit under the
        plot (``LEGEND_UP_TO``; a watched ResNet has 62): the title counts them and the
        tooltip names them. On a projector, four short names a row, two rows at most."""
        self._drop_param_legend()
        projector = self.theme.name == "projector"
        up_to = PROJECTOR_UP_TO if projector else LEGEND_UP_TO
        if not by_tensor(record) or len(record.params) > up_to:
            return None
        item = self.param_plot.getPlotItem()
        legend = pg.LegendItem(
            labelTextColor=self.theme.text,
            # projector type: the names a little smaller than the axes', so four fit a row
            labelTextSize=f"{round(self.text_px * (0.85 if projector else 1))}px",
            colCount=4 if projector else 2,  # fewer rows: the plot keeps its height
            frame=False,
            horSpacing=8,
        )
        # below the bottom axis and its label, as wide as the plot with its axes
        item.layout.addItem(legend, 4, 0, 1, 3)
        item.legend = legend
        for i, p in enumerate(record.params):
            sample = pg.PlotDataItem(pen=pen(self.theme.rank_color(i), self.theme.line_px + 1))
            legend.addItem(sample, tensor_label(p.name, p.numel, short=projector))
        return legend


def tensor_label(name: str, numel: int, short: bool = False) -> str:
    """``‖0.weight‖`` (a norm) or ``2.bias`` (a single number: its value); short, ``0.w``
    as the buckets stage names it (four to a row in projector type)."""
    if short:
        head, _, tail = name.rpartition(".")
        return f"{head}.{tail[:1]}" if head and tail in ("weight", "bias") else name
    return name if numel == 1 else f"‖{name}‖"
