"""The lesson's title fits its column. Qt drew an ``<h1>`` at its own xx-large (twice the
text), whatever the style sheet asked: in projector type with the lesson column open (Ctrl+L)
at 1280×800, "communication" in the comm-hooks title was wider than the column and cut at its
edge. The title is drawn at 1.6 times the text, smaller where its longest word would not fit
the column (never below the text's size), and drawn again when the column changes width."""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QApplication

from ddp_viz._qt.lesson_view import LessonView
from ddp_viz.model.course import load_course
from ddp_viz.model.theme import load_theme


def title_px(view) -> int:
    """The size the document draws the title's first character at."""
    block = view.document().begin()
    return block.begin().fragment().charFormat().font().pixelSize()


def widest_word(view) -> int:
    font = QFont(view.font())
    font.setBold(True)
    font.setPixelSize(title_px(view))
    words = view.document().begin().text().split()
    return max(QFontMetrics(font).horizontalAdvance(w) for w in words)


def room(view) -> float:
    return view.viewport().width() - 2 * view.document().documentMargin()


def settle() -> None:
    for _ in range(20):
        QApplication.processEvents()


def test_the_title_fits_the_projector_column_at_1280x800(make_window, settings) -> None:
    window = make_window((1280, 800), settings=settings, lesson_id="comm-hooks")
    window.presentation.set_projector(True)
    window.side_action.setChecked(True)  # Ctrl+L: the lesson column in projector type
    settle()
    view = window.lesson_view
    view.render()
    settle()
    assert view.isVisible() and title_px(view) == view.h1_px
    assert view.theme.font_px <= view.h1_px <= round(view.theme.font_px * 1.6)
    assert widest_word(view) <= room(view)
    assert view.horizontalScrollBar().maximum() == 0  # nothing cut, nothing to scroll to


def test_the_title_shrinks_in_a_narrow_column_and_grows_back(qtbot) -> None:
    theme = load_theme("projector")
    view = LessonView(load_course().get("comm-hooks"), theme)
    qtbot.addWidget(view)
    view.resize(260, 500)
    view.show()
    view.render()
    settle()
    full = round(theme.font_px * 1.6)
    assert title_px(view) == view.h1_px and theme.font_px <= view.h1_px < full
    if view.h1_px > theme.font_px:  # shrunk no further than it must
        assert widest_word(view) <= room(view)
    view.resize(900, 500)
    settle()
    assert title_px(view) == view.h1_px == full
