"""The lesson text breaks lines between words only (issue 33, item 5): a table's header read
"paramete/r" (its column squeezed below its longest word) and a dotted name in the text
"default_pg_tim/eout", at a learner's 1280×800 and in projector type."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QApplication

from ddp_viz._qt.lesson_view import ZW, LessonView
from ddp_viz._qt.theme import apply_theme
from ddp_viz.model.course import load_course
from ddp_viz.model.theme import load_theme

# the lesson column's width: a learner's at 1280×800, and a lecturer's who opened it in
# projector mode at 1280×800 and at 1920×1080
WIDTHS = [("light", 370), ("projector", 280), ("projector", 420)]


def _mid_word_breaks(doc: QTextDocument) -> list[str]:
    """Every line of ``doc`` that ends between two letters or digits of one word."""
    out = []
    block = doc.begin()
    while block.isValid():
        layout, text = block.layout(), block.text()
        for i in range(layout.lineCount() - 1):
            line = layout.lineAt(i)
            end = line.textStart() + line.textLength()
            if 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
                out.append(f"{text[max(0, end - 12) : end]}/{text[end : end + 8]}")
        block = block.next()
    return out


@pytest.mark.parametrize(("theme_name", "width"), WIDTHS)
def test_no_lesson_breaks_a_word_across_lines(qtbot, theme_name, width) -> None:
    theme = load_theme(theme_name)
    apply_theme(QApplication.instance(), theme)
    try:
        found = {}
        for lesson in load_course().lessons:
            view = LessonView(lesson, theme)
            qtbot.addWidget(view)
            view.resize(width, 600)
            view.show()
            view.render()
            QApplication.processEvents()
            if broken := _mid_word_breaks(view.document()):
                found[lesson.id] = broken
        assert not found
    finally:
        apply_theme(QApplication.instance(), load_theme("light"))


def test_a_learner_s_lesson_column_needs_no_sideways_scrolling(qtbot) -> None:
    """At 1280×800 every table's words and every name in code fit the column as it is."""
    theme = load_theme("light")
    for lesson in load_course().lessons:
        view = LessonView(lesson, theme)
        qtbot.addWidget(view)
        view.resize(370, 600)
        view.show()
        view.render()
        QApplication.processEvents()
        assert view.horizontalScrollBar().maximum() == 0, lesson.id


def test_a_long_dotted_name_breaks_at_a_dot_and_copies_without_the_breaks(qtbot) -> None:
    lesson = load_course().get("uneven-inputs")
    view = LessonView(lesson, load_theme("light"))
    qtbot.addWidget(view)
    view.resize(300, 600)
    view.show()
    view.render()
    name = "torch.distributed.constants.default_pg_timeout"
    cursor = view.document().find(f"torch{ZW}.distributed")
    assert not cursor.isNull()
    cursor.movePosition(cursor.MoveOperation.NextCharacter, cursor.MoveMode.KeepAnchor, 60)
    view.setTextCursor(cursor)
    copied = view.createMimeDataFromSelection().text()
    assert copied.startswith(name) and ZW not in copied
