"""Print the wall-clock time of a window's first paint, then close it (benchmark probe)."""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QWidget

from ddp_viz._qt.startup import AfterFirstPaint


class FirstPaintProbe(QObject):
    """PAINTED at the window's first paint; READY once its deferred start-up work is done."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window
        self.deferred = getattr(window, "after_paint", None) or AfterFirstPaint(window)
        self.deferred.painted.connect(self._on_painted)
        self._poll = QTimer(self)
        self._poll.setInterval(2)
        self._poll.timeout.connect(self._on_poll_timeout)

    def _on_painted(self) -> None:
        print(f"PAINTED {time.time():.6f}", flush=True)
        self._poll.start()

    def _on_poll_timeout(self) -> None:
        if self.deferred.finished or not self.deferred.callbacks:
            self._poll.stop()
            print(f"READY {time.time():.6f}", flush=True)
            self.window.close()
