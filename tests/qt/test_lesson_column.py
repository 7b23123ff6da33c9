"""The lesson column at 1280×800 (issue 33, item 3): a kind's longer form (uneven, accumulation,
not-averaged…) took the column's height and left the lesson and quiz pane about 215 px tall,
the quiz's Check button below the fold. The form now scrolls past its share."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication, QPushButton

from ddp_viz._qt.window_layout import TABS_LEAST, left_split


def test_the_form_gets_what_it_needs_until_the_tabs_would_go_under_their_share() -> None:
    assert left_split(700, 250) == (450, 250)  # under the 45% it may take
    tabs, form = left_split(700, 480)  # over it: the form scrolls
    assert tabs >= round(700 * TABS_LEAST) and tabs + form == 700


def test_every_lesson_leaves_the_quiz_check_button_in_sight(qtbot, make_window, settings) -> None:
    window = make_window((1280, 800), settings=settings)
    for lesson_id in window.course.ids:
        window.set_lesson(lesson_id)
        window.tabs.setCurrentWidget(window.quiz_view)
        QApplication.processEvents()
        column = window.splitters["left"].height()
        assert window.tabs.height() >= column * (TABS_LEAST - 0.02), lesson_id
        quiz = window.quiz_view
        check = next(b for b in quiz.findChildren(QPushButton) if b.text() == "Check")
        bottom = check.mapTo(quiz.viewport(), check.rect().bottomLeft()).y()
        assert bottom <= quiz.viewport().height(), (lesson_id, bottom)
