"""Which views a display refresh redraws while a run streams in.

A run that moves several steps between two refreshes (the stage following its newest step)
lets the plots and the stage take turns, so no frame pays for repainting both: those frames
were a fast run's longest. A slow run, or one the learner steps through, redraws both. A view
skipped by the last refresh is drawn anyway when nothing else comes soon, so no view is left
behind when the events pause.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from ddp_viz.model.timeline import RunRecord
from ddp_viz.model.watched import is_watched

BOTH = frozenset({"plots", "stage"})


class RefreshTurns(QObject):
    def __init__(
        self, catch_up: Callable[[frozenset[str]], None], after_ms: int, parent: QObject
    ) -> None:
        super().__init__(parent)
        self._catch_up = catch_up
        self._done = 0  # complete steps at the last refresh
        self._plots_next = True
        self._owed: frozenset[str] = frozenset()
        self._timer = QTimer(self, singleShot=True, interval=after_ms)
        self._timer.timeout.connect(self._on_timer_timeout)

    def views(self, record: RunRecord, following: bool) -> frozenset[str]:
        done = record.complete_prefix()
        fast = following and not record.done and done - self._done > 1
        self._done = done
        if not fast:
            self._owed = frozenset()
            self._timer.stop()
            return BOTH
        now = frozenset({"plots" if self._plots_next else "stage"})
        self._plots_next = not self._plots_next
        self._owed = BOTH - now
        self._timer.start()  # restarted by every refresh: fires only when they pause
        return now

    def _on_timer_timeout(self) -> None:
        owed, self._owed = self._owed, frozenset()
        if owed:
            self._catch_up(owed)


# A watched run's stage, while it streams and follows the newest step, is rebuilt at once when
# the newest complete step changes and otherwise at most this often: its events (eight ranks'
# timings, gradients, digests) came in a dozen refreshes a step, each rebuilding and repainting
# the whole page (some 13 ms of a loaded core) to change a count in its header.
WATCHED_STAGE_MS = 250


class StageRate(QObject):
    """Whether a refresh redraws the watched stage now; if not, a timer redraws it when due
    (``catch_up``), so the newest events always reach it."""

    def __init__(self, catch_up: Callable[[frozenset[str]], None], parent: QObject) -> None:
        super().__init__(parent)
        self._catch_up = catch_up
        self._step = -1
        self._last = -math.inf
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self._on_timer_timeout)

    def due(self, record: RunRecord, following: bool) -> bool:
        if not following or record.done or not is_watched(record):
            return True
        step, now = record.complete_prefix(), time.monotonic()
        wait_ms = WATCHED_STAGE_MS - (now - self._last) * 1e3
        if step != self._step or wait_ms <= 0:
            self._step, self._last = step, now
            self._timer.stop()
            return True
        if not self._timer.isActive():
            self._timer.start(max(1, math.ceil(wait_ms)))
        return False

    def _on_timer_timeout(self) -> None:
        self._catch_up(frozenset({"stage"}))
