"""The lesson text: Markdown from assets/, with highlighted code, in a text browser."""

from __future__ import annotations

import functools
import re

from PySide6.QtCore import QMimeData, Qt
from PySide6.QtGui import QFont, QFontMetrics, QResizeEvent, QTextOption
from PySide6.QtWidgets import QTextBrowser, QWidget

from ddp_viz._qt.hanging import code_blocks, hang
from ddp_viz.model.lesson import Lesson, markdown_to_html
from ddp_viz.model.theme import Theme

ZW = "\u200b"  # zero-width space: a place a line may break, drawn as nothing
CODE = re.compile(r"<(pre|code)\b[^>]*>.*?</\1>", re.S)
# where a name in code may break when it does not fit: before a dot, after an underscore,
# between camel-case words (torch.distributed / .constants / .default_ / pg_ / timeout)
BREAKS = re.compile(
    r"(?<=[\w)\]])(?=\.[A-Za-z_])"  # before a dot
    r"|(?<=[A-Za-z0-9]_)(?=[A-Za-z0-9])"  # after an underscore
    r"|(?<=[a-z])(?=[A-Z])"  # between camel-case words
)


LONG = re.compile(r"\S{17,}")  # a name in running text that may not fit a narrow column
TABLE = re.compile(r"<table\b.*?</table>", re.S)


def code_breaks(html: str) -> str:
    """``html`` with a zero-width space wherever a name in code may break: the lesson wraps
    at word boundaries only, and a dotted path longer than the line breaks at a dot, not
    mid-name ("default_pg_tim/eout"). In running text only long names get them (a short
    one, ``nn.Sequential``, moves to the next line whole); in code blocks and in tables
    (whose columns are as wide as their longest word) every name."""
    html = TABLE.sub(lambda t: CODE.sub(lambda m: _breaks_in(m, True), t.group(0)), html)
    return CODE.sub(lambda m: _breaks_in(m, m.group(1) == "pre"), html)


def _breaks_in(m: re.Match[str], every: bool) -> str:
    """The code element ``m`` with its break points: in every name, or in long ones."""
    parts = re.split(r"(<[^>]+>)", m.group(0))
    return "".join(
        p if p.startswith("<") else BREAKS.sub(ZW, p) if every else LONG.sub(_long, p)
        for p in parts
    )


def _long(m: re.Match[str]) -> str:
    return BREAKS.sub(ZW, m.group(0))


H1 = re.compile(r"<h1([^>]*)>(.*?)</h1>", re.S)


def size_titles(html: str, px: int) -> str:
    """``html`` with each title (level-1 heading) a bold paragraph ``px`` high: Qt draws an
    ``<h1>`` at its own xx-large, whatever size a style sheet or its text asks for."""
    return H1.sub(
        lambda m: (
            f'<p{m.group(1)} style="margin-top: {px // 2}px; margin-bottom: {px // 3}px">'
            f'<span style="font-size: {px}px; font-weight: 700">{m.group(2)}</span></p>'
        ),
        html,
    )


@functools.lru_cache(maxsize=8)
def title_words(markdown: str) -> tuple[str, ...]:
    """The words of the lesson's titles (its ``# `` lines), read once per text: the view asks
    at every resize."""
    return tuple(
        w for line in markdown.splitlines() if line.startswith("# ") for w in line[2:].split()
    )


class LessonView(QTextBrowser):
    def __init__(self, lesson: Lesson, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lesson = lesson
        self.setOpenExternalLinks(True)
        self.setAccessibleName("Lesson")
        # Lines break between words, never inside one: a table's columns are then at least
        # as wide as their longest word ("paramete/r" was a column squeezed below it), and a
        # name in code breaks where code_breaks allows. What still cannot fit (a table of
        # long words in a very narrow column) scrolls sideways rather than being cut.
        self.setWordWrapMode(QTextOption.WrapMode.WordWrap)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.theme = theme
        self.rendered = False
        self.h1_px = 0  # the headings' size it was rendered with
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
        self.h1_px = self.heading_px()
        self.document().setDefaultStyleSheet(
            f"body {{ color: {theme.text}; }}"
            f" h2 {{ font-size: {round(theme.font_px * 1.25)}px; color: {theme.accent}; }}"
            f" code {{ background: {code_bg}; }} blockquote {{ color: {theme.text}; }}"
        )
        html = code_breaks(markdown_to_html(self.lesson.markdown, style, code_bg))
        self.setHtml(size_titles(html, self.h1_px))
        mono = QFont(["DejaVu Sans Mono", "monospace"])
        mono.setPixelSize(self.font().pixelSize() if self.font().pixelSize() > 0 else 13)
        hang(code_blocks(self.document()), mono)  # wrapped code keeps its indentation

    def heading_px(self) -> int:
        """The title's size: 1.6 times the text's, smaller where its longest word would not fit
        the column (projector type in a narrow column cut "communication" in two), never
        under the text's own size."""
        want = round(self.theme.font_px * 1.6)
        words = title_words(self.lesson.markdown)
        font = QFont(self.font())
        font.setBold(True)
        font.setPixelSize(want)
        widest = max((QFontMetrics(font).horizontalAdvance(w) for w in words), default=0)
        room = self.viewport().width() - 2 * self.document().documentMargin() - 2
        if widest <= room or room <= 0:
            return want
        return max(self.theme.font_px, int(want * room / widest))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        # in sight only: a window being closed (or a test's teardown restyling the app) resizes
        # views nobody will see, and rendering them again then is work for nothing
        if self.isVisible() and self.rendered and self.heading_px() != self.h1_px:
            bar = self.verticalScrollBar().value()
            self.set_theme(self.theme)  # rendered again with headings that fit
            self.verticalScrollBar().setValue(bar)

    def createMimeDataFromSelection(self) -> QMimeData:
        """Copied code pastes as written: without the breaks :func:`code_breaks` put in."""
        data = super().createMimeDataFromSelection()
        out = QMimeData()
        out.setText(data.text().replace(ZW, ""))
        if data.hasHtml():
            out.setHtml(data.html().replace(ZW, ""))
        return out
