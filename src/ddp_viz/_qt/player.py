"""Play, pause and step through the recorded run, one stage phase at a time."""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal

from ddp_viz.model.cursor import PHASES
from ddp_viz.model.timeline import Cursor, RunRecord, RunStatus

LAST = len(PHASES) - 1


class Player(QObject):
    """Owns the stage position (:class:`Cursor` + progress 0–1 within the phase).

    ``phase_ms`` is how long one phase animates at speed 1; 0 makes every tick advance one
    whole phase (tests use that). With ``follow_latest`` the stage jumps to the newest
    complete step instead of animating each one (fast mode for long runs).
    """

    position_changed = Signal(object, float)
    playing_changed = Signal(bool)
    phase_entered = Signal(str)

    def __init__(self, parent: QObject | None = None, phase_ms: int = 1100) -> None:
        super().__init__(parent)
        self.phase_ms = phase_ms
        self.speed = 1.0
        self.record: RunRecord | None = None
        self.cursor = Cursor()
        self.progress = 0.0
        self.playing = False
        self.follow_latest = False
        # one position per step, its last phase (a watched run's page: its step has no
        # animated phases, and Right moves a whole step)
        self.whole_steps = False
        self._last = time.monotonic()
        self._timer = QTimer(self)
        self._timer.setInterval(16)
        self._timer.timeout.connect(self._on_timer_timeout)

    # --- what can be shown -------------------------------------------------------------------
    def available_steps(self) -> int:
        """Steps whose every rank has reported (a live run grows this)."""
        return 0 if self.record is None else self.record.complete_prefix()

    def set_record(self, record: RunRecord | None) -> None:
        self.record = record
        self.cursor, self.progress = Cursor(), 0.0
        self._emit(entered=True)

    def on_record_updated(self) -> None:
        if self.follow_latest:
            n = self.available_steps()
            if n:
                entered = self.cursor != Cursor(n - 1, 3)
                self.cursor, self.progress = Cursor(n - 1, 3), 1.0
                self._emit(entered=entered)
        elif self.playing and not self._timer.isActive():
            self._last = time.monotonic()
            self._timer.start()
        else:
            self._emit()

    # --- transport ---------------------------------------------------------------------------
    def play(self) -> None:
        if self.record is None:
            return
        if self._at_end() and not self._more_coming():
            self.cursor, self.progress = Cursor(), 0.0
            self._emit(entered=True)
        self.playing = True
        self._last = time.monotonic()
        self._timer.start()
        self.playing_changed.emit(True)

    def pause(self) -> None:
        self.playing = False
        self._timer.stop()
        self.playing_changed.emit(False)

    def toggle(self) -> None:
        self.pause() if self.playing else self.play()

    def step_forward(self) -> None:
        self.pause()
        if self.progress < 1.0:
            self.progress = 1.0
            self._emit()
            return
        nxt = self._next()
        if nxt != self.cursor:
            self.cursor, self.progress = nxt, 1.0
            self._emit(entered=True)

    def step_back(self) -> None:
        self.pause()
        prev = self.cursor.prev()
        if self.whole_steps:
            prev = Cursor(max(0, self.cursor.step - 1), LAST)
        self.cursor, self.progress = prev, 1.0
        self._emit(entered=True)

    def seek_step(self, step: int) -> None:
        n = self.available_steps()
        if n == 0:
            return
        self.cursor, self.progress = Cursor(max(0, min(step, n - 1)), 3), 1.0
        self._emit(entered=True)

    def set_speed(self, speed: float) -> None:
        self.speed = max(0.1, speed)

    # --- animation ---------------------------------------------------------------------------
    def _at_end(self) -> bool:
        return self.cursor.is_last(self.available_steps()) and self.progress >= 1.0

    def _more_coming(self) -> bool:
        return self.record is not None and self.record.status is RunStatus.RUNNING

    def _on_timer_timeout(self) -> None:
        now = time.monotonic()
        dt, self._last = now - self._last, now
        if self.cursor.step >= self.available_steps():
            if not self._more_coming():
                self.pause()
            return  # wait for the ranks to report this step
        duration = self.phase_ms / 1000 / self.speed
        self.progress = 1.0 if duration <= 0 else self.progress + dt / duration
        if self.progress < 1.0:
            self._emit()
            return
        self.progress = 1.0
        nxt = self._next()
        if nxt == self.cursor:
            planned = (self.record.steps_planned or len(self.record.steps)) if self.record else 1
            if self.cursor.step + 1 >= max(1, planned) or not self._more_coming():
                # the whole run has been shown, or all of a run that stalled or failed
                self.pause()
            self._emit()
            return
        self.cursor, self.progress = nxt, (1.0 if duration <= 0 else 0.0)
        self._emit(entered=True)

    def _next(self) -> Cursor:
        n = self.available_steps()
        if not self.whole_steps:
            return self.cursor.next(n)
        return Cursor(self.cursor.step + 1, LAST) if self.cursor.step + 1 < n else self.cursor

    def _emit(self, entered: bool = False) -> None:
        if self.whole_steps and self.cursor.phase != LAST:  # Home, a new record: a whole step
            self.cursor = Cursor(self.cursor.step, LAST)
        self.position_changed.emit(self.cursor, self.progress)
        if entered:
            self.phase_entered.emit(self.cursor.phase_name)
