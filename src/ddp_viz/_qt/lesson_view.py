"""The lesson text: Markdown from assets/, with highlighted code, in a text browser."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QTextBrowser, QWidget

from ddp_viz._qt.hanging import code_blocks, hang
from ddp_viz.model.lesson import Lesson, markdown_to_html
from ddp_viz.model.theme import Theme


class LessonView(QTextBrowser):
    def __init__(self, lesson: Lesson, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lesson = lesson
        self.setOpenExternalLinks(True)
        self.setAccessibleName("Lesson")
        # the text, code and tables wrap to the width; no sideways scrolling
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.theme = theme
        self.rendered = False
        self.setPlainText(f"{lesson.title}\n\nLoading the lesson…")
        # Markdown + Pygments cost ~0.1 s: the window renders it after its first paint.

    def set_lesson(self, lesson: Lesson) -> None:
        self.lesson = lesson
        self.set_theme(self.theme)
        self.verticalScrollBar().setValue(0)

    def render(self) -> None:
        if not self.rendered:
            self.set_theme(self.theme)

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.rendered = True
        code_bg = theme.window if not theme.dark else "#15161a"
        style = "monokai" if theme.dark else "default"
        self.document().setDefaultStyleSheet(
            f"body {{ color: {theme.text}; }} h1 {{ font-size: {round(theme.font_px * 1.6)}px; }}"
            f" h2 {{ font-size: {round(theme.font_px * 1.25)}px; color: {theme.accent}; }}"
            f" code {{ background: {code_bg}; }} blockquote {{ color: {theme.text}; }}"
        )
        self.setHtml(markdown_to_html(self.lesson.markdown, style, code_bg))
        mono = QFont(["DejaVu Sans Mono", "monospace"])
        mono.setPixelSize(self.font().pixelSize() if self.font().pixelSize() > 0 else 13)
        hang(code_blocks(self.document()), mono)  # wrapped code keeps its indentation
