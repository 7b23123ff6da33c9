"""The quiz: multiple-choice questions with explained feedback, and a prediction graded
against the live run's value."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import (
    QButtonGroup,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from ddp_viz.model.quiz import (
    Feedback,
    Question,
    Score,
    grade_choice,
    grade_prediction,
    parse_prediction,
)
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import RunRecord, scalar


class WrappingChoice(QWidget):
    """A radio button whose text wraps (QRadioButton's own text never does)."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.button = QRadioButton()
        self.button.setAccessibleName(text)
        self.label = QLabel(text)
        self.label.setWordWrap(True)
        self.label.setBuddy(self.button)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.label, 1)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        self.button.setChecked(True)
        super().mouseReleaseEvent(event)


class QuizView(QScrollArea):
    score_changed = Signal(int, int)

    def __init__(self, questions: list[Question], theme: Theme, parent: QWidget | None = None):
        super().__init__(parent)
        self.theme = theme
        self.questions = questions
        self.score = Score()
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QWidget()
        self.layout_ = QVBoxLayout(body)
        self.score_label = QLabel()
        self.score_label.setObjectName("quiz_score")
        self.layout_.addWidget(self.score_label)
        self.groups: dict[str, QButtonGroup] = {}
        self.feedback: dict[str, QLabel] = {}
        self.prediction_edit: QLineEdit | None = None
        self.locked_prediction: float | None = None
        self.prediction_question: Question | None = None
        for i, q in enumerate(questions, start=1):
            self.layout_.addWidget(self._question_box(i, q))
        self.layout_.addStretch(1)
        self.setWidget(body)
        self._update_score()

    def set_theme(self, theme: Theme) -> None:
        """Feedback written from now on uses the new theme's colours."""
        self.theme = theme

    def _question_box(self, number: int, q: Question) -> QGroupBox:
        box = QGroupBox(f"Question {number}")
        v = QVBoxLayout(box)
        prompt = QLabel(q.prompt)
        prompt.setWordWrap(True)
        v.addWidget(prompt)
        fb = QLabel("")
        fb.setWordWrap(True)
        fb.setObjectName(f"feedback_{q.id}")
        self.feedback[q.id] = fb
        if q.kind == "choice":
            group = QButtonGroup(box)
            for k, text in enumerate(q.choices):
                choice = WrappingChoice(text)
                group.addButton(choice.button, k)
                v.addWidget(choice)
            check = QPushButton("Check")
            check.setObjectName(f"check_{q.id}")
            check.clicked.connect(lambda _=False, q=q, g=group: self._on_check_clicked(q, g))
            self.groups[q.id] = group
            v.addWidget(check)
        else:
            self.prediction_question = q
            row = QHBoxLayout()
            edit = QLineEdit()
            edit.setPlaceholderText("your prediction, e.g. -12.5")
            edit.setAccessibleName("prediction")
            lock = QPushButton("Lock in")
            lock.setObjectName(f"lock_{q.id}")
            lock.clicked.connect(self._on_lock_clicked)
            row.addWidget(edit, 1)
            row.addWidget(lock)
            v.addLayout(row)
            self.prediction_edit = edit
        v.addWidget(fb)
        return box

    def _show(self, q: Question, fb: Feedback) -> None:
        label = self.feedback[q.id]
        label.setText(("✓ " if fb.correct else "✗ ") + fb.text)
        label.setStyleSheet(f"color: {self.theme.ok if fb.correct else self.theme.bad};")
        self.score.record(q.id, fb.correct)
        self._update_score()

    def _on_check_clicked(self, q: Question, group: QButtonGroup) -> None:
        picked = group.checkedId()
        if picked < 0:
            self.feedback[q.id].setText("Pick an answer first.")
            self.feedback[q.id].setStyleSheet("")
            return
        self._show(q, grade_choice(q, picked))

    def answer(self, question_id: str, choice: int) -> None:
        """Pick and check an answer (keyboard users and tests)."""
        q = next(q for q in self.questions if q.id == question_id)
        group = self.groups[question_id]
        group.button(choice).setChecked(True)
        self._on_check_clicked(q, group)

    def _on_lock_clicked(self) -> None:
        assert self.prediction_edit is not None and self.prediction_question is not None
        q = self.prediction_question
        try:
            self.locked_prediction = parse_prediction(self.prediction_edit.text())
        except ValueError as exc:
            self.feedback[q.id].setText(f"Enter a number: {exc}.")
            self.feedback[q.id].setStyleSheet(f"color: {self.theme.bad};")
            return
        self.feedback[q.id].setText(
            f"Locked in: {self.locked_prediction:g}. Now press Run; the real run grades it."
        )
        self.feedback[q.id].setStyleSheet("")

    def grade_against_run(self, record: RunRecord) -> None:
        """Grade a locked-in prediction with the averaged weight gradient the ranks computed."""
        q = self.prediction_question
        if q is None or self.locked_prediction is None or not record.steps:
            return
        avg = record.steps[0].averaged()
        if avg is None:
            return
        self._show(q, grade_prediction(q, self.locked_prediction, scalar(avg, "weight")))
        self.locked_prediction = None

    def _update_score(self) -> None:
        self.score_label.setText(self.score.text(len(self.questions)))
        self.score_changed.emit(self.score.correct, len(self.questions))
