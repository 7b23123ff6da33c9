"""One row per rank (pid, state) and the engine's stderr in a collapsible log."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ddp_viz.model import protocol
from ddp_viz.model.report import rows_label
from ddp_viz.model.session import EngineState
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import RunRecord, RunStatus

MAX_LOG_BLOCKS = 5000


def has_hosts(rec: RunRecord) -> bool:
    """The run's kind reports where its ranks run (the last column shows hosts)."""
    return any(k.rank_hosts is not None for k in rec.kinds())


def rank_hosts(rec: RunRecord) -> dict[int, str]:
    """rank -> host, as the run's kind reports them (none for our own runs)."""
    return next((k.rank_hosts(rec) for k in rec.kinds() if k.rank_hosts is not None), {})


def ranks_done(rec: RunRecord) -> set[int]:
    """The ranks whose training is over while the run is not, as the run's kind says."""
    return {r for k in rec.kinds() if k.ranks_done is not None for r in k.ranks_done(rec)}


NOT_NEEDED = "no engine needed: these ranks are your script's"


class ProcessView(QWidget):
    def __init__(self, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.engine_label = QLabel("engine: starting…")
        self.engine_label.setWordWrap(True)
        self.restart = QPushButton("Restart engine")
        self.restart.setVisible(False)
        self.table = QTableWidget(0, 0)
        header = self.table.horizontalHeader()
        # every column as wide as its text (states are never cut); the rows column takes the rest
        header.setMinimumSectionSize(24)
        header.setDefaultSectionSize(28)
        header.setStretchLastSection(True)
        self.table.setColumnCount(4)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)  # elided, not scrolled
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setHorizontalHeaderLabels(["#", "pid", "state", "rows"])
        self.table.horizontalHeaderItem(0).setToolTip("rank")
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAccessibleName("rank processes")
        self.table.setTabKeyNavigation(False)  # Tab leaves the table: no keyboard trap
        self.log_toggle = QToolButton()
        self.log_toggle.setCheckable(True)
        self.log_toggle.setText("▸ Engine log")
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(MAX_LOG_BLOCKS)
        mono = QFont(["DejaVu Sans Mono", "monospace"])
        mono.setPixelSize(max(10, theme.font_px - 2))
        self.log.setFont(mono)
        self.log.setVisible(False)
        # an open log never widens the panel (it pushed the plots past the window's edge)
        self.log.setMinimumWidth(40)
        self.log.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        head = QHBoxLayout()
        head.addWidget(self.engine_label, 1)
        head.addWidget(self.restart)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(head)
        layout.addWidget(self.table, 2)
        layout.addWidget(self.log_toggle)
        layout.addWidget(self.log, 2)
        self.log_toggle.toggled.connect(self._on_log_toggle_toggled)
        self._workers: dict[int, protocol.WorkerState] = {}
        self._record: RunRecord | None = None
        self._pending = 0  # ranks a requested run is waiting for
        self._lines = 0
        self._engine_state = EngineState.STARTING
        self._engine_needed = True

    def needed_width(self) -> int:
        """Width that shows every column whole: the rows column as wide as its widest text."""
        t = self.table
        cols = sum(
            max(t.sizeHintForColumn(c), t.horizontalHeader().sectionSizeHint(c)) for c in range(4)
        )
        margins = self.layout().contentsMargins()
        return cols + 2 * t.frameWidth() + margins.left() + margins.right() + 8

    def minimumSizeHint(self) -> QSize:  # the splitter keeps the table's columns whole
        return QSize(self.needed_width(), super().minimumSizeHint().height())

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._shown = None  # repaint the state colours
        self._refresh()

    def _on_log_toggle_toggled(self, shown: bool) -> None:
        self.log.setVisible(shown)
        self._update_toggle()

    def _update_toggle(self) -> None:
        arrow = "▾" if self.log_toggle.isChecked() else "▸"
        self.log_toggle.setText(f"{arrow} Engine log ({self._lines} lines)")

    def append_log(self, text: str) -> None:
        text = text.rstrip("\n")
        if not text:
            return
        self.log.appendPlainText(text)
        self._lines += text.count("\n") + 1
        self._update_toggle()

    def set_engine_needed(self, needed: bool) -> None:
        """A watched run's page runs nothing of its own: its ranks are the user's script's,
        so the engine's state (it may still be starting, for the lessons) is not this page's."""
        self._engine_needed = needed
        self.set_engine_state(self._engine_state)
        self._refresh()  # the lessons' warm ranks are listed, or are not, at once

    def set_engine_state(self, state: EngineState) -> None:
        self._engine_state = state
        if not self._engine_needed and state is not EngineState.CRASHED:
            self.engine_label.setText(NOT_NEEDED)
            self.engine_label.setStyleSheet("")
            self.restart.setVisible(False)
            return
        words = {
            EngineState.STARTING: "engine: starting (importing torch once for all ranks)…",
            EngineState.READY: "engine: running",
            EngineState.STOPPED: "engine: stopped",
            EngineState.CRASHED: "engine: the engine process ended unexpectedly. "
            "Restart it to run again.",
        }
        self.engine_label.setText(words[state])
        bad = state is EngineState.CRASHED
        self.engine_label.setStyleSheet(f"color: {self.theme.bad};" if bad else "")
        self.restart.setVisible(bad)

    def set_workers(self, workers: dict[int, protocol.WorkerState]) -> None:
        self._workers = workers
        self._refresh()

    def set_record(self, record: RunRecord | None) -> None:
        self._record = record
        if self._pending:
            self._pending = 0
            self.set_engine_state(EngineState.READY)
        self._refresh()

    def set_pending(self, ranks: int) -> None:
        """A run was requested: show the pool warming up until its ranks start."""
        self._pending = ranks
        self._refresh()

    def rows(self) -> list[tuple[str, str, str, str]]:
        """What the table shows, for tests and screen readers."""
        rec = self._record
        if (
            not self._pending
            and rec is not None
            and rec.world_size
            and rec.status is not RunStatus.IDLE
        ):
            out = []
            hosts = rank_hosts(rec)
            for r in range(rec.world_size):
                pid = rec.pids.get(r)
                if hosts:
                    where = hosts.get(r, "—")
                elif r < len(rec.shards) or r in rec.rank_rows:
                    where = rows_label(rec.shards[r] if r < len(rec.shards) else rec.rank_rows[r])
                else:
                    where = "—"
                out.append((str(r), str(pid or "—"), self._rank_state(rec, r), where))
            return out
        if not self._engine_needed:
            return []  # the lessons' warm ranks are not this page's: its ranks are a script's
        return [
            (
                "—",
                str(w.pid or "—"),
                "warm" if w.state == protocol.WorkerStatus.READY else w.state,
                "—",
            )
            for _, w in sorted(self._workers.items())
        ]

    def _rank_state(self, rec: RunRecord, r: int) -> str:
        for kind in rec.kinds():  # the kind's own word first: a watched rank that crashed
            said = kind.rank_states(rec).get(r) if kind.rank_states is not None else None
            if said is not None:
                return said
        if rec.status is RunStatus.FAILED:
            if rec.reason.startswith("diverged"):
                return "diverged"
            if rec.failed_rank == r or rec.failed_rank is None:
                return "failed"
            return "stopped"
        if rec.status is RunStatus.CANCELLED:
            return "cancelled"
        if r not in rec.pids:
            return "starting"
        if rec.status is RunStatus.FINISHED or r in ranks_done(rec):
            return "done"  # the rank's last word: its training is over
        return "training"

    def _refresh(self) -> None:
        if self._pending:
            ready = sum(w.state == protocol.WorkerStatus.READY for w in self._workers.values())
            self.engine_label.setText(
                f"starting {self._pending} rank(s)… {min(ready, self._pending)} warm"
            )
        rows = self.rows()
        hosted = self._record is not None and has_hosts(self._record)
        # a DistributedSampler hands out other rows every epoch: the column holds the first's
        data = self._record.scenario.get("data", {}) if self._record is not None else {}
        sampled = data.get("sampler") == "distributed"
        head = self.table.horizontalHeaderItem(3)
        head.setText("host" if hosted else "epoch 1" if sampled else "rows")
        head.setToolTip(
            "the rows this rank's sampler gave it in the first epoch; the stage shows each step's"
            if sampled and not hosted
            else ""
        )
        if rows == getattr(self, "_shown", None):
            return  # nothing changed: streaming runs call this at display rate
        before, self._shown = getattr(self, "_shown", None) or [], rows
        if self.table.rowCount() != len(rows):
            self.table.setRowCount(len(rows))
        colors = {"failed": self.theme.bad, "diverged": self.theme.bad, "done": self.theme.ok,
                  "hung": self.theme.bad, "stuck": self.theme.bad}  # fmt: skip
        for i, row in enumerate(rows):
            for c, text in enumerate(row):
                # only the cells that changed: a cell set costs about a millisecond (the table
                # lays itself out again), and 8 ranks joining one by one reset 32 cells 8 times
                if i < len(before) and before[i][c] == text and self.table.item(i, c):
                    continue
                item = QTableWidgetItem(text)
                if c == 2 and (text in colors or text.startswith("killed")):
                    item.setForeground(QColor(colors.get(text, self.theme.bad)))
                if c == 0 and text.isdigit():
                    item.setForeground(QColor(self.theme.rank_color(int(text))))
                self.table.setItem(i, c, item)
        self.updateGeometry()  # a longer rows column may need more width
