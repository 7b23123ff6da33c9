"""Holds the plots and builds them just after the window's first paint.

Importing pyqtgraph (and numpy) costs about 0.2 s; the window appears first and the plots,
empty until a run anyway, follow a moment later.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ddp_viz.model.theme import Theme

if TYPE_CHECKING:
    from types import ModuleType

    from ddp_viz._qt.plots import Plots


class PlotsPanel(QWidget):
    def __init__(self, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self._plots: Plots | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._placeholder = QLabel("Plots: loss, weights, loss surface")
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._layout.addWidget(self._placeholder)
        self.compact = False
        # the page can draw a loss surface (a watched run never does). Hidden when the page is
        # shown, not when its run starts: the plots' re-layout then repainted every plot
        # in the run's first frames
        self.surface = True
        self.expected: ModuleType | None = None  # the run's kind, on a kind's page

    def expect(self, curves: ModuleType | None) -> None:
        """The page waits for a run of the kind whose plots' part is ``curves`` (None: a
        lesson's own run), told to the plots now or when they are built."""
        self.expected = curves
        if self._plots is not None:
            self._plots.expect(curves)

    def set_compact(self, on: bool) -> None:
        """Projector: the surface's explanation moves into a tooltip to give the plots room."""
        self.compact = on
        if self._plots is not None:
            self._plots.set_compact(on)

    def ensure(self) -> Plots:
        if self._plots is None:
            from ddp_viz._qt.plots import Plots

            self._plots = Plots(self.theme)
            self._plots.set_compact(self.compact)
            self._plots.clear_run(self.surface)
            if self.expected is not None:
                self._plots.expect(self.expected)
            self._layout.removeWidget(self._placeholder)
            self._placeholder.deleteLater()
            self._layout.addWidget(self._plots)
        return self._plots

    @property
    def built(self) -> bool:
        return self._plots is not None
