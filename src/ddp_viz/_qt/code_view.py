"""The training loop, syntax-highlighted, with the line that is running highlighted.

The type shrinks (down to a floor) until the longest line fits, so statements are not wrapped
on a laptop; below the floor lines wrap at word boundaries rather than hide behind a scroll bar.
Lines that are ddp-viz's own instrumentation are dimmed.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QResizeEvent,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import QTextEdit, QWidget

from ddp_viz._qt.hanging import hang
from ddp_viz.model.lesson import Lesson, highlight_python
from ddp_viz.model.theme import Theme

MONO = ["DejaVu Sans Mono", "Menlo", "Consolas", "monospace"]
MIN_PX = 11


class CodeView(QTextEdit):
    def __init__(self, lesson: Lesson, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lesson = lesson
        self.theme = theme
        self.scenario: dict | None = None  # the values the listing shows (the lesson's default)
        self.code = lesson.code_with(None)
        self.current_lines: list[int] = []
        self.phase = ""  # the phase whose lines are marked
        self.section = ""  # the part of the listing the stage shows running ("": all)
        self.setReadOnly(True)
        self.setLineWrapMode(QTextEdit.LineWrapMode.WidgetWidth)
        self.setAccessibleName("Training loop code")
        self.setPlainText(self.code)  # the window highlights it after its first paint
        self._rendered = False
        self._rendering = False
        self._refit = QTimer(self, singleShot=True, interval=0)
        self._refit.timeout.connect(self._on_refit_timeout)

    def set_lesson(self, lesson: Lesson) -> None:
        self.lesson = lesson
        self.scenario = None
        self.code = lesson.code_with(None)
        self.current_lines, self.phase = [], ""
        self._render()

    def set_scenario(self, scenario: dict | None) -> None:
        """Show the values of this scenario (a run's) in the listing."""
        code = self.lesson.code_with(scenario)
        self.scenario = scenario
        if code != self.code:
            self.code = code
            if self.phase:  # a ${choose:…} text of another length moves the marked lines
                self.current_lines = self.lesson.lines_for(self.phase, self.scenario, self.section)
            self._render()

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._render()

    def render(self) -> None:
        self._render()

    def fitted_px(self) -> int:
        """The largest type, up to the theme's, at which the longest line fits the width."""
        longest = max(self.code.splitlines() or [""], key=len)
        # the vertical scroll bar may come and go with the type size: leave room for it
        scroll = self.verticalScrollBar()
        bar = 0 if scroll.isVisible() else scroll.sizeHint().width()
        room = self.viewport().width() - bar - 2 * self.document().documentMargin() - 10
        px = self.theme.font_px
        while px > MIN_PX:
            font = QFont(MONO)
            font.setPixelSize(px)
            if QFontMetricsF(font).horizontalAdvance(longest) <= room:
                break
            px -= 1
        return px

    def _render(self) -> None:
        if self._rendering:
            return
        self._rendering = True
        try:
            self._render_now()
        finally:
            self._rendering = False

    def _render_now(self) -> None:
        self._rendered = True
        font = QFont(MONO)
        font.setPixelSize(self.fitted_px())
        self.setFont(font)
        style = "monokai" if self.theme.dark else "default"
        self.setHtml(highlight_python(self.code, style, "margin:0; white-space:pre-wrap"))
        dim = QTextCharFormat()
        dim.setForeground(QColor(self.theme.muted))
        dim.setFontItalic(True)
        for line in self.lesson.dim_lines(self.scenario):
            block = self.document().findBlockByNumber(line - 1)
            if block.isValid():
                cursor = QTextCursor(block)
                cursor.movePosition(
                    QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor
                )
                cursor.mergeCharFormat(dim)
        doc = self.document()
        hang([doc.findBlockByNumber(n) for n in range(len(self.code.splitlines()))], font)
        # blank lines after the code let it scroll by whole lines down to the last one
        end = QTextCursor(self.document())
        end.movePosition(QTextCursor.MoveOperation.End)
        for _ in range(4):
            end.insertBlock()
        self.highlight_phase_lines(self.current_lines, force=True)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._rendered:
            self._refit.start()  # after the resize settles, never inside a render

    def _on_refit_timeout(self) -> None:
        if self.font().pixelSize() != self.fitted_px():
            self._render()

    def highlight_phase(self, phase: str) -> None:
        self.phase = phase
        lines = self.lesson.lines_for(phase, self.scenario, self.section)
        self.highlight_phase_lines(lines)

    def set_section(self, section: str) -> None:
        """The part of the listing the stage shows running (the ring's two loops)."""
        if section != self.section:
            self.section = section
            self.highlight_phase(self.phase)

    def highlight_phase_lines(self, lines: list[int], force: bool = False) -> None:
        if list(lines) == self.current_lines and not force:
            return  # fast mode re-enters the same phase every frame: nothing to redo
        self.current_lines = list(lines)
        selections = []
        for line in lines:
            block = self.document().findBlockByNumber(line - 1)
            if not block.isValid():
                continue
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(QColor(self.theme.highlight))
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            cursor = QTextCursor(block)  # the whole block, so a wrapped line lights up entirely
            cursor.movePosition(
                QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor
            )
            sel.cursor = cursor
            selections.append(sel)
        self.setExtraSelections(selections)
        if lines:
            block = self.document().findBlockByNumber(lines[0] - 1)
            if block.isValid():
                self.setTextCursor(QTextCursor(block))
                self._scroll_to_show(lines[0] - 1, lines[-1] - 1)

    def _scroll_to_show(self, first: int, last: int) -> None:
        """Scroll by whole lines so the highlighted ones show, and no line is cut at the top."""
        doc = self.document()
        layout = doc.documentLayout()
        viewport_h = self.viewport().height()
        bar = self.verticalScrollBar()

        def top(n: int) -> float:
            return layout.blockBoundingRect(doc.findBlockByNumber(n)).top()

        def bottom(n: int) -> float:
            return layout.blockBoundingRect(doc.findBlockByNumber(n)).bottom()

        start = first
        while start > 0 and bottom(last) - top(start - 1) <= viewport_h:
            start -= 1  # show as much context above as fits
        bar.setValue(min(bar.maximum(), round(top(start))))

    def highlighted_text(self) -> list[str]:
        return [self.document().findBlockByNumber(n - 1).text().strip() for n in self.current_lines]

    def wrapped_lines(self) -> list[int]:
        """1-based listing lines that the view had to wrap (tests: none on a laptop)."""
        doc = self.document()
        return [
            n + 1
            for n in range(len(self.code.splitlines()))
            if doc.findBlockByNumber(n).layout().lineCount() > 1
        ]
