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


# A costly stage's turn after the plots' (StageRate.due): long enough for their repaint to
# come first and the thread to sleep between, short next to the stage's own rate
APART_MS = 24


class StageRate(QObject):
    """Whether a refresh redraws the stage now; if not, a timer redraws it when due
    (``catch_up``), so the newest events always reach it. A kind whose stage is costly to
    rebuild sets its rate (``RunKind.stage_every_ms``): while its run streams and the view
    follows the newest step, the stage is rebuilt at once when the newest complete step
    changes and otherwise at most that often."""

    def __init__(self, catch_up: Callable[[frozenset[str]], None], parent: QObject) -> None:
        super().__init__(parent)
        self._catch_up = catch_up
        self._step = -1
        self._last = -math.inf
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self._on_timer_timeout)

    def due(self, record: RunRecord, following: bool, plots_too: bool = False) -> bool:
        """``plots_too``: this refresh redraws the plots; a costly stage then waits for a turn
        of its own, ``APART_MS`` later, so the plots' update and repaint and the stage's
        rebuild and repaint are two short slices of the thread, with a sleep between."""
        every_ms = next((k.stage_every_ms for k in record.kinds() if k.stage_every_ms), None)
        if not following or record.done or every_ms is None:
            return True
        step, now = record.complete_prefix(), time.monotonic()
        wait_ms = every_ms - (now - self._last) * 1e3
        if step != self._step or wait_ms <= 0:
            if plots_too:
                if not self._timer.isActive():  # refreshes that keep coming do not put it off
                    self._timer.start(APART_MS)
                return False
            self._step, self._last = step, now
            self._timer.stop()
            return True
        if not self._timer.isActive():
            self._timer.start(max(1, math.ceil(wait_ms)))
        return False

    def _on_timer_timeout(self) -> None:
        self._catch_up(frozenset({"stage"}))
