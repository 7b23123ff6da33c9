"""Defer costly start-up work until the window has painted once (as mnelab and napari do)."""

from __future__ import annotations

import gc
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import QApplication, QWidget


class AfterFirstPaint(QObject):
    """Run callbacks once, right after the first Paint of ``window`` or any widget in it."""

    painted = Signal()  # at the first paint itself (the start-up benchmark listens)

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.window = window
        self.callbacks: list[Callable[[], None]] = []
        self.fired = False
        self.finished = False
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)

    def add(self, callback: Callable[[], None]) -> None:
        if self.fired:
            QTimer.singleShot(0, callback)
        else:
            self.callbacks.append(callback)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if (
            not self.fired
            and isinstance(event, QPaintEvent)  # before type(): that one builds an enum
            and isinstance(obj, QWidget)
            and obj.window() is self.window
        ):
            self.fired = True
            QApplication.instance().removeEventFilter(self)
            self.painted.emit()
            # a short delay lets the rest of the first frame reach the screen first
            QTimer.singleShot(30, self._run)
        return False

    def _run(self) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for cb in callbacks:
            cb()
        self.finished = True


def freeze_start_up() -> None:
    """Move what the window's start-up made (Qt wrappers, pyqtgraph, the course, ~10^5
    objects that live as long as the window) out of the cyclic collector's reach (gc.freeze,
    after a collection so no garbage is kept). A full collection scanned them all: 74 ms of
    the window's thread at a time during a watched run, in a frame that otherwise took 5.
    Objects made later are collected as before. For the app's window, not for tests that make
    hundreds of windows in one process."""
    gc.collect()
    gc.freeze()
