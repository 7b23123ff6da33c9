"""Blank the screen: what a presenter clicker's blank key (B, or ".") does in slide software.
The window goes black, so a lecturer can talk without the stage behind them; the same key
brings it back as it was (the player keeps its place)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QWidget


class BlankScreen(QWidget):
    """A black cover over the whole of its window, following the window's size."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.setObjectName("blank_screen")
        self.hide()
        window.installEventFilter(self)

    def toggle(self) -> None:
        if self.isVisible():
            self.hide()
            return
        self.setGeometry(self.parentWidget().rect())
        self.show()
        self.raise_()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and self.isVisible():
            self.setGeometry(self.parentWidget().rect())
        return False

    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), Qt.GlobalColor.black)
        p.end()
