"""The watched page's Run tab: every bucket and every tensor of the step on the stage, in
tables the user sorts (click a heading) and scrolls. The stage shows the few rows that matter
most; a model of 120 tensors has all of them here. The tables draw rows they are given; the
tab's glue reads them from the record at the player's position."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ddp_viz._qt.window_layout import apply_split_proportions
from ddp_viz.kinds.watched.run import is_watched, latest_full
from ddp_viz.kinds.watched.steps import bucket_times, size_text, tensor_rows
from ddp_viz.model.frame import fmt
from ddp_viz.model.timeline import Cursor, RunRecord

Cell = tuple[str, float | str]  # what a cell shows, and what it sorts by


class _Item(QTableWidgetItem):
    """A cell that sorts by its value (numbers as numbers, "—" last), not by its text."""

    def __init__(self, text: str, key: float | str) -> None:
        super().__init__(text)
        self.key = key
        self.setFlags(self.flags() & ~Qt.ItemFlag.ItemIsEditable)
        if not isinstance(key, str):
            self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        a, b = self.key, getattr(other, "key", other.text())
        if isinstance(a, str) or isinstance(b, str):
            return str(a) < str(b)
        return (math.isnan(a), a) < (math.isnan(b), b)


class SortedTable(QTableWidget):
    """A read-only table the user sorts by any column; it keeps their order as rows change."""

    def __init__(self, name: str) -> None:
        super().__init__(0, 0)
        self.setAccessibleName(name)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setTabKeyNavigation(False)  # Tab leaves the table
        self.setSortingEnabled(True)

    def set_rows(self, heads: list[str], rows: list[list[Cell]], tips: list[str]) -> None:
        self.setSortingEnabled(False)  # filling a sorted table moves rows under the loop
        self.setColumnCount(len(heads))
        self.setHorizontalHeaderLabels(heads)
        self.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for c, (text, key) in enumerate(row):
                item = _Item(text, key)
                if tips[i]:
                    item.setToolTip(tips[i])
                self.setItem(i, c, item)
        self.setSortingEnabled(True)  # sorts again by the user's column, if they chose one

    def column(self, c: int) -> list[str]:
        """A column's texts top to bottom, as shown (tests, screen readers)."""
        return [self.item(i, c).text() for i in range(self.rowCount())]


def _num(v: float | None, text: str | None = None) -> Cell:
    v = math.nan if v is None else v
    return (text if text is not None else fmt(v), v)


def bucket_table(rec: RunRecord, step: int) -> tuple[list[str], list[list[Cell]], list[str]]:
    """Heads, rows and each row's tooltip (its tensors) for the buckets of ``step``."""
    heads = ["bucket", "size", "tensors", "all-reduce ms", "waited ms", "last rank"]
    buckets = bucket_times(rec.steps[step]) if 0 <= step < len(rec.steps) else []
    rows = [
        [_num(bt.index, f"#{bt.index}"), _num(bt.bytes, size_text(bt.bytes)),
         _num(len(bt.params), str(len(bt.params))), _num(bt.own_s * 1e3, f"{bt.own_s * 1e3:.2f}"),
         _num(bt.waited_s * 1e3, f"{bt.waited_s * 1e3:.2f}"), _num(bt.last, f"rank {bt.last}")]
        for bt in buckets
    ]  # fmt: skip
    tips = [f"bucket #{bt.index}: " + ", ".join(bt.params) for bt in buckets]
    return heads, rows, tips


def tensor_table(rec: RunRecord, step: int) -> tuple[list[str], list[list[Cell]], list[str], str]:
    """Heads, rows, tooltips and a caption for every tensor of the latest step captured in
    full up to ``step``."""
    st = latest_full(rec, step)
    if st is None:
        return [], [], [], "No step captured in full yet (the capture budget decides which)."
    ranks = sorted(st.ranks)
    heads = ["tensor", "shape", "bucket", *[f"‖grad‖ rank {r}" for r in ranks], "‖averaged‖",
             "spread", "same on all"]  # fmt: skip
    rows, tips = [], []
    for row in tensor_rows(rec, st):
        bucket = row.bucket if row.bucket is not None else math.nan
        same = {True: "✓", False: "✗", None: "—"}[row.identical]
        rows.append(
            [(row.name, row.name), (str(list(row.shape)), str(math.prod(row.shape)).zfill(12)),
             _num(bucket, "—" if row.bucket is None else f"#{row.bucket}"),
             *[_num(row.local[r]) for r in ranks], _num(row.averaged), _num(row.spread),
             (same, same)]
        )  # fmt: skip
        tips.append("")
    caption = (
        f"Step {st.step + 1} (the latest captured in full): {len(rows)} tensors. Click a "
        "heading to sort; spread: the largest minus the smallest rank's local norm."
    )
    return heads, rows, tips, caption


class WatchTables(QWidget):
    """The Run tab: the buckets of the step on the stage, and every tensor's gradient norms."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.buckets_label = QLabel("")
        self.buckets_label.setWordWrap(True)
        self.buckets = SortedTable("buckets of the step on the stage")
        self.tensors_label = QLabel("")
        self.tensors_label.setWordWrap(True)
        self.tensors = SortedTable("every tensor's gradient norms")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        for w, stretch in ((self.buckets_label, 0), (self.buckets, 1)):
            lay.addWidget(w, stretch)
        for w, stretch in ((self.tensors_label, 0), (self.tensors, 2)):
            lay.addWidget(w, stretch)
        self._shown: tuple[Any, ...] = ()

    def needed_width(self) -> int:
        """The width that shows every column of both tables whole, with a scroll bar."""
        margins = self.layout().contentsMargins()
        return margins.left() + margins.right() + max(
            t.horizontalHeader().length() + t.verticalScrollBar().sizeHint().width()
            + 2 * t.frameWidth() + 2
            for t in (self.buckets, self.tensors)
        )  # fmt: skip

    def show_at(self, rec: RunRecord | None, cursor: Cursor) -> None:
        """Show ``rec`` at the stage's step (nothing again if that is what is shown)."""
        if rec is None or not is_watched(rec) or not rec.steps:
            self._shown = ()
            self.buckets_label.setText("Buckets: none yet.")
            self.tensors_label.setText("Tensors: none yet.")
            self.buckets.set_rows([], [], [])
            self.tensors.set_rows([], [], [])
            return
        step = min(cursor.step, len(rec.steps) - 1)
        full = latest_full(rec, step)
        key = (id(rec), step, full.step if full else None, len(rec.steps[step].ranks))
        if key == self._shown:
            return
        self._shown = key
        heads, rows, tips = bucket_table(rec, step)
        self.buckets_label.setText(
            f"Buckets of step {step + 1}: hover a row for its tensors. all-reduce: on the rank "
            "that launched the bucket last (no waiting); waited: how long the first waited."
        )
        self.buckets.set_rows(heads, rows, tips)
        heads, rows, tips, caption = tensor_table(rec, step)
        self.tensors_label.setText(caption)
        self.tensors.set_rows(heads, rows, tips)


class RunTab(QObject):
    """Keeps the window's Run tab (a watched run's page only) at the stage's step: it reads
    the record at the player's position and gives the tables their rows, while the tab is
    the one shown (and once more when it is chosen)."""

    def __init__(self, window: Any) -> None:  # window: MainWindow
        super().__init__(window)
        self.window = window
        self.tables = WatchTables()
        window.player.position_changed.connect(self._on_player_position_changed)
        window.tabs.currentChanged.connect(self._on_tabs_current_changed)

    def set_shown(self, on: bool) -> None:
        """The Run tab is there on the watched page, and only there."""
        tabs = self.window.tabs
        index = tabs.indexOf(self.tables)
        if on and index < 0:
            tabs.addTab(self.tables, "Run")
        elif not on and index >= 0:
            tabs.removeTab(index)
        self.tables.show_at(None, Cursor())

    def _refresh(self) -> None:
        if self.window.tabs.currentWidget() is self.tables:
            self.tables.show_at(self.window.player.record, self.window.player.cursor)

    def _on_player_position_changed(self, _cursor: Cursor, _progress: float) -> None:
        self._refresh()

    def _on_tabs_current_changed(self, _index: int) -> None:
        self._refresh()
        apply_split_proportions(self.window)  # the Run tab's column widens for its tables

    def wanted_width(self, width: int) -> int:
        """How wide the lesson column wants to be, in a window ``width`` wide, while the Run
        tab is the tab shown: its tables' columns whole, up to half the window; else 0."""
        if self.window.tabs.currentWidget() is not self.tables:
            return 0
        return min(round(width * 0.5), self.tables.needed_width())

    def show_now(self) -> None:
        """View ▸ Run tables (Ctrl+T): the column shown (on a projector it is folded away),
        the Run tab chosen, the keyboard in its tensors table."""
        self.window.side_action.setChecked(True)
        self.window.tabs.setCurrentWidget(self.tables)
        self.tables.tensors.setFocus()
        apply_split_proportions(self.window)


def show_run_tab(window: Any, on: bool) -> None:
    """The watched page's Run tab on (``on``) or off, made the first time it is asked for."""
    window.run_tables_action.setEnabled(on)
    tab = getattr(window, "run_tab", None)
    if tab is None:
        if not on:
            return
        tab = window.run_tab = RunTab(window)
        window.side_views.append(tab)  # the layout asks it how wide the column must be
    tab.set_shown(on)


def show_run_tables(window: Any) -> None:
    """View ▸ Run tables: the watched page's Run tab, in sight (nothing on a lesson)."""
    tab = getattr(window, "run_tab", None)
    if tab is not None and window.tabs.indexOf(tab.tables) >= 0:
        tab.show_now()
