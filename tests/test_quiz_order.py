"""The quiz cannot be passed by its shape: choices are shown in a per-learner shuffled order,
graded by the real answer."""

from __future__ import annotations

import pytest

from ddp_viz.model.quiz import Question, display_order, grade_choice

QUESTION = Question(
    id="when",
    kind="choice",
    prompt="When?",
    explain="Because.",
    choices=("a", "b", "c", "d", "e"),
    answer=3,
    why_not=("not a", "not b", "not c", "", "not e"),
)


def test_the_order_is_a_shuffle_stable_per_learner_and_question() -> None:
    order = display_order(QUESTION, "me")
    assert sorted(order) == list(range(5))
    assert display_order(QUESTION, "me") == order  # a retry, or a restart: the same order
    others = {display_order(QUESTION, f"learner {i}") for i in range(20)}
    assert len(others) > 5  # other learners see other orders
    renamed = Question(**{**QUESTION.__dict__, "id": "other"})
    assert any(
        display_order(renamed, f"l{i}") != display_order(QUESTION, f"l{i}") for i in range(5)
    )


def test_grading_reads_the_real_index_whatever_the_position_shown() -> None:
    order = display_order(QUESTION, "me")
    right_at = order.index(QUESTION.answer)
    for position, real in enumerate(order):
        feedback = grade_choice(QUESTION, real)
        assert feedback.correct == (position == right_at)
        if not feedback.correct:
            assert QUESTION.why_not[real] in feedback.text


@pytest.mark.usefixtures("qapp")
def test_the_quiz_shows_the_shuffled_order_and_grades_the_option_clicked(qtbot) -> None:
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtWidgets import QPushButton

    from ddp_viz._qt.quiz_view import QuizView, WrappingChoice
    from ddp_viz.model.theme import load_theme

    view = QuizView([QUESTION], load_theme("light"), learner="me")
    qtbot.addWidget(view)
    shown = [w.label.text() for w in view.widget().findChildren(WrappingChoice)]
    order = display_order(QUESTION, "me")
    assert order != tuple(range(5)) and shown == [QUESTION.choices[k] for k in order]
    choices = view.widget().findChildren(WrappingChoice)
    right = choices[order.index(QUESTION.answer)]
    qtbot.mouseClick(right.button, Qt.MouseButton.LeftButton, pos=QPoint(2, 2))
    assert right.button.isChecked()
    view.widget().findChild(QPushButton, "check_when").click()
    assert view.feedback["when"].text().startswith("✓ Right")
    view.set_questions(view.questions)  # "Start the quiz again": the same order
    again = [w.label.text() for w in view.widget().findChildren(WrappingChoice)]
    assert again == shown
