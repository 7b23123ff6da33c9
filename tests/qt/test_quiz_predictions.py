"""The quiz view of a lesson with two prediction questions (uneven-inputs): each question has
its own field and its own Lock in, which locks that question and no other."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit, QPushButton


def test_each_prediction_question_locks_its_own_field(qtbot, window) -> None:
    window.set_lesson("uneven-inputs")
    quiz = window.quiz_view
    predicts = [q.id for q in quiz.questions if q.kind == "predict"]
    assert predicts == ["predict-missing-rank", "predict-join-average"]
    fields = {qid: quiz.findChild(QLineEdit, f"prediction_{qid}") for qid in predicts}
    assert all(f is not None for f in fields.values()) and len(set(fields.values())) == 2
    # the first question: its field, its button
    fields["predict-missing-rank"].setText("2")
    qtbot.mouseClick(
        quiz.findChild(QPushButton, "lock_predict-missing-rank"), Qt.MouseButton.LeftButton
    )
    assert quiz.feedback["predict-missing-rank"].text().startswith("Locked in: 2")
    assert quiz.feedback["predict-join-average"].text() == ""  # the other one untouched
    # then the last, by Enter in its own field
    fields["predict-join-average"].setText("−13.3")
    qtbot.keyClick(fields["predict-join-average"], Qt.Key.Key_Return)
    assert quiz.feedback["predict-join-average"].text().startswith("Locked in: -13.3")
    assert quiz.feedback["predict-missing-rank"].text().startswith("Locked in: 2")
    assert {qid: p.value for qid, p in window.session.predictions.items()} == {
        "predict-missing-rank": 2.0,
        "predict-join-average": -13.3,
    }
    # a count's field does not suggest a negative fraction
    assert "-12.5" not in fields["predict-missing-rank"].placeholderText()
