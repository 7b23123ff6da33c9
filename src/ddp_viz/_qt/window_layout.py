"""Where the window's panels go: the lesson column, the stage over the code and processes, the
plots; and each column's share of the width."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGroupBox, QScrollArea, QSplitter, QVBoxLayout, QWidget

TABS_LEAST = 0.58  # of the lesson column's height the lesson and quiz keep, however long the form


def _group(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    lay = QVBoxLayout(box)
    lay.setContentsMargins(4, 4, 4, 4)
    lay.addWidget(widget)
    return box


def lay_out(self: Any) -> None:
    """Build the splitters of ``self`` (the main window) and set the central widget."""
    left = QSplitter(Qt.Orientation.Vertical)
    left.addWidget(self.tabs)
    # a kind's form can be long (uneven, accumulation): past its share it scrolls, so the
    # lesson and the quiz's Check button keep their room
    self.form_scroll = QScrollArea()
    self.form_scroll.setWidgetResizable(True)
    self.form_scroll.setFrameShape(QFrame.Shape.NoFrame)
    self.form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    self.form_scroll.setWidget(_group("Try it yourself", self.form))
    left.addWidget(self.form_scroll)
    bottom = QSplitter(Qt.Orientation.Horizontal)
    bottom.addWidget(_group("Code each rank runs (the line running now)", self.code_view))
    self.process_box = _group("Processes", self.process_view)
    bottom.addWidget(self.process_box)
    center = QSplitter(Qt.Orientation.Vertical)
    center.addWidget(self.stage)
    center.addWidget(bottom)
    main = QSplitter(Qt.Orientation.Horizontal)
    main.addWidget(left)
    main.addWidget(center)
    main.addWidget(self.plots_panel)
    main.setChildrenCollapsible(False)
    self.splitters = {"main": main, "left": left, "center": center, "bottom": bottom}
    self.setCentralWidget(main)


def apply_split_proportions(self: Any) -> None:
    """Give each column its share of the width (stretch factors only share the surplus)."""
    w = max(1, self.splitters["main"].width())
    h = max(1, self.splitters["center"].height())
    projector = self.presentation.projector
    side = self.splitters["left"].isVisibleTo(self)
    if projector and side:  # a lecturer opened the lesson column on a projector
        self.splitters["main"].setSizes([round(w * 0.22), round(w * 0.5), round(w * 0.28)])
        self.splitters["center"].setSizes([round(h * 0.72), round(h * 0.28)])
        return
    if projector or not side:
        self.splitters["main"].setSizes([0, round(w * 0.7), round(w * 0.3)])
        share = 0.72 if projector else 0.68
        self.splitters["center"].setSizes([round(h * share), round(h * (1 - share))])
        return
    self.splitters["main"].setSizes([round(w * 0.28), round(w * 0.46), round(w * 0.26)])
    cw = max(1, self.splitters["bottom"].width())
    self.splitters["bottom"].setSizes([round(cw * 0.6), round(cw * 0.4)])
    self.splitters["center"].setSizes([round(h * 0.68), round(h * 0.32)])
    left_h = max(1, self.splitters["left"].height())
    need = self.form_scroll.widget().sizeHint().height() + 2
    self.splitters["left"].setSizes(list(left_split(left_h, need)))


def left_split(height: int, form_need: int) -> tuple[int, int]:
    """(lesson and quiz tabs, form) heights for a lesson column ``height`` tall: the form gets
    what it needs while the tabs keep :data:`TABS_LEAST` of the column, then it scrolls."""
    form = min(form_need, round(height * (1 - TABS_LEAST)))
    return height - form, form
