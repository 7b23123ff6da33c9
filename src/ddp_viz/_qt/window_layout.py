"""Where the window's panels go: the lesson column, the stage over the code and processes, the
plots; and each column's share of the width."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer
from PySide6.QtWidgets import QFrame, QGroupBox, QScrollArea, QSplitter, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from ddp_viz._qt.main_window import MainWindow  # which imports this module

TABS_LEAST = 0.55  # of the lesson column's height the lesson and quiz keep, however long the form


class FormScroll(QScrollArea):
    """Scrolls a long form up and down, never sideways: as wide as the form needs, and its
    scroll bar's width more while the form is taller than its pane."""

    def minimumSizeHint(self) -> QSize:
        inner = self.widget()
        if inner is None:
            return super().minimumSizeHint()
        width = inner.minimumSizeHint().width() + 2 * self.frameWidth()
        if self._scrolls():
            width += self.verticalScrollBar().sizeHint().width()
        return QSize(width, super().minimumSizeHint().height())

    def _scrolls(self) -> bool:
        """The bar is there, or will be: its width is the form's to keep. (The form's height
        at its width can pass the pane's while its minimum does not: word-wrapped lines grow
        as it narrows, and the bar then covered the data table's y column and "− row".)"""
        inner = self.widget()
        if inner is None:
            return False
        return (
            self.verticalScrollBar().isVisibleTo(self)
            or inner.minimumSizeHint().height() > self.viewport().height()
        )

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if self._scrolls() != getattr(self, "_scrolled", None):  # the bar came or went
            self._scrolled = self._scrolls()
            self.updateGeometry()


def _group(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    lay = QVBoxLayout(box)
    lay.setContentsMargins(4, 4, 4, 4)
    lay.addWidget(widget)
    return box


def lay_out(self: MainWindow) -> None:
    """Build the splitters of ``self`` (the main window) and set the central widget."""
    left = QSplitter(Qt.Orientation.Vertical)
    left.addWidget(self.tabs)
    # a kind's form can be long (uneven, accumulation): past its share it scrolls, so the
    # lesson and the quiz's Check button keep their room
    self.form_scroll = FormScroll()
    self.form_scroll.setWidgetResizable(True)
    self.form_scroll.setFrameShape(QFrame.Shape.NoFrame)
    self.form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    self.form_scroll.setWidget(_group("Try it yourself", self.form))
    left.addWidget(self.form_scroll)
    bottom = QSplitter(Qt.Orientation.Horizontal)
    # a short title: a group box is never narrower than its title, and the longer one
    # ("… (the line running now)") held the centre column wide enough to squeeze the plots
    code_box = _group("Code each rank runs", self.code_view)
    code_box.setToolTip("The highlighted line is the one the ranks are running now.")
    bottom.addWidget(code_box)
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
    self.split_keepers = [SplitKeeper(main), SplitKeeper(bottom)]
    self.setCentralWidget(main)


def apply_split_proportions(self: MainWindow) -> None:
    """Give each column its share of the width (stretch factors only share the surplus)."""
    w = max(1, self.splitters["main"].width())
    h = max(1, self.splitters["center"].height())
    projector = self.presentation.projector
    side = self.splitters["left"].isVisibleTo(self)
    # a lecturer opened the lesson column on a projector: the plots fold away while it shows,
    # or the stage (half the width) shrank its 24 px type to 7 px; a watched run's page
    # keeps them beside its Run tab (Ctrl+T)
    lecture = projector and side and self.lesson.id in self.course.ids
    self.plots_panel.setVisible(self.lesson.plots and not lecture)
    if lecture:
        left = max(round(w * 0.3), min(self.splitters["left"].minimumSizeHint().width(), w // 2))
        self.splitters["main"].setSizes([left, w - left, 0])
        self.splitters["center"].setSizes([round(h * 0.72), round(h * 0.28)])
        return
    if projector and side:
        plots = round(w * 0.28)
        # a watched run's tables, chosen (Ctrl+T): wider, taking from the stage's share
        room = w - plots - self.splitters["center"].minimumSizeHint().width()
        # ... and never under the column's own least width (its tabs in projector type): a
        # splitter takes a column's shortfall from the plots, and cut their titles
        least = self.splitters["left"].minimumSizeHint().width()
        left = max(
            round(w * 0.22), min(max(side_views_width(self, w), least), round(w * 0.45), room)
        )
        self.splitters["main"].setSizes([left, w - left - plots, plots])
        self.splitters["center"].setSizes([round(h * 0.72), round(h * 0.28)])
        return
    if projector or not side:
        self.splitters["main"].setSizes([0, round(w * 0.7), round(w * 0.3)])
        share = 0.72 if projector else 0.68
        self.splitters["center"].setSizes([round(h * share), round(h * (1 - share))])
        return
    left_w = max(round(w * 0.28), self.splitters["left"].minimumSizeHint().width())
    self.splitters["main"].setSizes(list(main_split(w, left_w)))
    cw = max(1, self.splitters["bottom"].width())
    self.splitters["bottom"].setSizes(list(bottom_split(cw, self.process_view.needed_width())))
    self.splitters["center"].setSizes([round(h * 0.68), round(h * 0.32)])
    left_h = max(1, self.splitters["left"].height())
    need = self.form_scroll.widget().sizeHint().height() + 2
    self.splitters["left"].setSizes(list(left_split(left_h, need)))


class SideView(Protocol):
    """A view a kind's page adds to the left column (``MainWindow.side_views``)."""

    def wanted_width(self, width: int) -> int:
        """The column's width it wants in a window ``width`` wide (0: it is not in sight)."""
        ...


def side_views_width(self: MainWindow, width: int) -> int:
    """The widest the kinds' side views want the left column (0: none in sight)."""
    return max((v.wanted_width(width) for v in self.side_views), default=0)


def left_split(height: int, form_need: int) -> tuple[int, int]:
    """(lesson and quiz tabs, form) heights for a lesson column ``height`` tall: the form gets
    what it needs while the tabs keep :data:`TABS_LEAST` of the column, then it scrolls."""
    form = min(form_need, round(height * (1 - TABS_LEAST)))
    return height - form, form


def bottom_split(width: int, processes_need: int) -> tuple[int, int]:
    """(code, processes) widths: the processes what their table needs (up to half), so its
    columns are never cut behind a scroll bar, and at least 30%; the code the rest, so its
    statements do not wrap."""
    processes = min(round(width * 0.5), max(round(width * 0.3), processes_need))
    return width - processes, processes


def fit_sizes(sizes: list[int], mins: list[int], total: int) -> list[int]:
    """``sizes`` changed as little as can be so that each is at least its minimum and they
    add up to ``total``: what a panel grew by (a longer form, an open log) comes from the
    widest panels that can give, not from past the window's edge."""
    out = [max(s, m) for s, m in zip(sizes, mins, strict=True)]
    excess = sum(out) - total
    while excess > 0:
        room = [s - m for s, m in zip(out, mins, strict=True)]
        giving = [k for k in range(len(out)) if room[k] > 0]
        if not giving:
            break  # nothing can give: the minimums alone are wider than the window
        i = max(giving, key=lambda k: out[k])  # the widest panel gives first (the stage)
        take = min(excess, room[i])
        out[i] -= take
        excess -= take
    if excess < 0:  # the window grew: the widest panel takes the spare room
        out[max(range(len(out)), key=lambda k: out[k])] -= excess
    return out


class SplitKeeper(QObject):
    """Keeps a splitter's panels inside it when one's minimum grows after the split was set
    (QSplitter keeps the old sizes and pushes the last panel past the window's edge)."""

    def __init__(self, splitter: QSplitter) -> None:
        super().__init__(splitter)
        self.splitter = splitter
        self._timer = QTimer(self, singleShot=True, interval=0)
        self._timer.timeout.connect(self._on_timer_timeout)
        for i in range(splitter.count()):
            splitter.widget(i).installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.LayoutRequest, QEvent.Type.Show, QEvent.Type.Hide):
            self._timer.start()
        return False

    def _on_timer_timeout(self) -> None:
        sp = self.splitter
        shown = [i for i in range(sp.count()) if not sp.widget(i).isHidden()]
        if not shown:
            return
        sizes = sp.sizes()
        total = sp.width() - sp.handleWidth() * (len(shown) - 1)
        mins = [
            sp.widget(i).minimumSizeHint().width() if i in shown else 0 for i in range(sp.count())
        ]
        want = [sizes[i] if i in shown else 0 for i in range(sp.count())]
        if all(want[i] >= mins[i] for i in shown) and sum(want) <= total:
            return
        fitted = fit_sizes([want[i] for i in shown], [mins[i] for i in shown], total)
        for i, size in zip(shown, fitted, strict=True):
            want[i] = size
        sp.setSizes(want)


def apply_presentation(self: MainWindow, theme: Any, projector: bool) -> None:
    """Projector mode on or off for ``self`` (the main window): its theme, and secondary
    panels folded away on a projector so the stage, code and plots get the room."""
    for act, checked in ((self.projector_action, projector), (self.side_action, not projector)):
        act.blockSignals(True)
        act.setChecked(checked)
        act.blockSignals(False)
    self.set_theme(theme)
    self.splitters["left"].setVisible(not projector)
    self.process_box.setVisible(not projector)
    self.speed_label_action.setVisible(not projector)
    self.speed_action.setVisible(not projector)  # room for the keys a lecturer uses
    self.plots_panel.set_compact(projector)
    self.follow.setText("Follow" if projector else "Follow latest step")
    apply_split_proportions(self)
    # again once the new type has set the panels' minimum sizes (leaving projector mode)
    QTimer.singleShot(0, lambda: apply_split_proportions(self))


def main_split(width: int, left: int) -> tuple[int, int, int]:
    """(lesson column, centre, plots) widths with the lesson column ``left`` wide: 28%, 46%
    and 26%; a lesson column wider than its share (a long form) takes from the plots first,
    down to 20%, so the code under the stage keeps its width."""
    plots = max(round(width * 0.2), round(width * 0.26) - max(0, left - round(width * 0.28)))
    return left, width - left - plots, plots
