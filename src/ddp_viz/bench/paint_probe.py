"""Print the wall-clock time of a window's first paint, then close it (benchmark probe)."""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QWidget


class FirstPaintProbe(QObject):
    """Catches the first Paint event delivered to ``window`` or any widget inside it."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window
        self.done = False
        QApplication.instance().installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if (
            not self.done
            and event.type() == QEvent.Type.Paint
            and isinstance(obj, QWidget)
            and obj.window() is self.window
        ):
            self.done = True
            print(f"PAINTED {time.time():.6f}", flush=True)
            QApplication.instance().removeEventFilter(self)
            self._poll = QTimer(self)
            self._poll.setInterval(2)
            self._poll.timeout.connect(self._on_poll_timeout)
            self._poll.start()
        return False

    def _on_poll_timeout(self) -> None:
        """READY: the work a window defers past its first paint has finished too."""
        deferred = getattr(self.window, "after_paint", None)
        if deferred is None or deferred.finished:
            self._poll.stop()
            print(f"READY {time.time():.6f}", flush=True)
            self.window.close()
