"""The status bar's line: wraps onto a second line rather than run past the window's edge
(a stall's explanation with a recording's version note is ~200 characters), never more."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QLabel, QWidget

WRAP = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap

MOST_LINES = 2


class StatusLine(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)

    def _most(self) -> int:
        return self.fontMetrics().lineSpacing() * MOST_LINES + 4

    # Always two lines' height, whatever the text: a status that went from one line to two
    # re-laid out the whole window (stage, plots, code, tables all resized and repainted in
    # one frame), at the start of every run.
    def hasHeightForWidth(self) -> bool:
        return False

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), self._most())

    def minimumSizeHint(self) -> QSize:  # narrow enough for any window
        return QSize(80, self._most())

    def changeEvent(self, event: QEvent) -> None:
        # projector type (24 px): the status bar kept the height of the type it was made in,
        # so two lines drawn in one line's height lost their tops and their underscores
        # ("dist.all reduce")
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self.setMinimumHeight(self._most())
            self.updateGeometry()
        super().changeEvent(event)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)  # all of it, should two lines not hold it

    def shown_text(self, width: int | None = None) -> str:
        """The text as drawn: whole if two lines at ``width`` hold it, else cut at a word
        with "…" (the tooltip has it all)."""
        width = self.contentsRect().width() if width is None else width
        fm, most, text = self.fontMetrics(), self._most(), self.text()

        def fits(t: str) -> bool:
            return fm.boundingRect(QRect(0, 0, max(1, width), 100_000), WRAP, t).height() <= most

        if fits(text):
            return text
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(text[:mid] + " …") else (lo, mid - 1)
        head = text[:lo]
        return (head.rpartition(" ")[0] or head).rstrip(" ,;:") + " …"

    def paintEvent(self, _event: object) -> None:
        p = QPainter(self)
        p.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        p.drawText(self.contentsRect(), WRAP, self.shown_text())
        p.end()
