"""The quiz: multiple-choice questions with explained feedback, and a prediction locked before
Run and graded (by the session controller) when the stage reveals the real value."""

from __future__ import annotations

import secrets

from PySide6.QtCore import QSettings, Qt, Signal
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

from ddp_viz.model.lesson import inline_markdown
from ddp_viz.model.quiz import (
    Feedback,
    Question,
    Score,
    display_order,
    grade_choice,
    parse_prediction,
    placeholder_for,
)
from ddp_viz.model.theme import Theme


def learner_of(settings: QSettings | None) -> str:
    """This installation's quiz seed: random, made on first use and kept in the settings, so
    the choices stay in one order across restarts (a scripted window has none: "")."""
    if settings is None:
        return ""
    value = str(settings.value("quiz/learner", "") or "")
    if not value:
        value = secrets.token_hex(8)
        settings.setValue("quiz/learner", value)
    return value


def _rich_label(markdown: str) -> QLabel:
    label = QLabel(inline_markdown(markdown))
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setWordWrap(True)
    return label


class WrappingChoice(QWidget):
    """A radio button whose text wraps (QRadioButton's own text never does)."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.button = QRadioButton()
        self.button.setAccessibleName(text)
        self.label = _rich_label(text)
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
    passed = Signal()  # every question answered right at least once
    prediction_locked = Signal(object, float)  # Question, value

    def __init__(
        self,
        questions: list[Question],
        theme: Theme,
        parent: QWidget | None = None,
        learner: str = "",
    ):
        super().__init__(parent)
        self.theme = theme
        self.learner = learner  # seeds the order the choices are shown in (display_order)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.set_questions(questions)

    def set_questions(self, questions: list[Question]) -> None:
        """Show a lesson's quiz, with a fresh score."""
        self.questions = list(questions)
        self.score = Score()
        self.groups: dict[str, QButtonGroup] = {}
        # per choice question, the choices' indices in the order they are shown
        self.shown: dict[str, tuple[int, ...]] = {}
        self.feedback: dict[str, QLabel] = {}
        # one field per predict question: each Lock in reads and locks its own question's
        self.prediction_edits: dict[str, QLineEdit] = {}
        body = QWidget()
        self.layout_ = QVBoxLayout(body)
        self.score_label = QLabel()
        self.score_label.setObjectName("quiz_score")
        self.layout_.addWidget(self.score_label)
        for i, q in enumerate(self.questions, start=1):
            self.layout_.addWidget(self._question_box(i, q))
        retake = QPushButton("Start the quiz again")
        retake.clicked.connect(lambda: self.set_questions(self.questions))
        self.layout_.addWidget(retake)
        self.layout_.addStretch(1)
        self.setWidget(body)
        self._update_score()

    def set_theme(self, theme: Theme) -> None:
        """Feedback written from now on uses the new theme's colours."""
        self.theme = theme

    def _question_box(self, number: int, q: Question) -> QGroupBox:
        box = QGroupBox(f"Question {number}")
        v = QVBoxLayout(box)
        v.addWidget(_rich_label(q.prompt))
        fb = QLabel("")
        fb.setWordWrap(True)
        fb.setTextFormat(Qt.TextFormat.RichText)
        fb.setObjectName(f"feedback_{q.id}")
        self.feedback[q.id] = fb
        if q.kind == "choice":
            group = QButtonGroup(box)
            self.shown[q.id] = display_order(q, self.learner)
            for k in self.shown[q.id]:  # shown shuffled; the button's id is the real index
                choice = WrappingChoice(q.choices[k])
                group.addButton(choice.button, k)
                v.addWidget(choice)
            check = QPushButton("Check")
            check.setObjectName(f"check_{q.id}")
            check.clicked.connect(lambda _=False, q=q, g=group: self._on_check_clicked(q, g))
            self.groups[q.id] = group
            v.addWidget(check)
        else:
            row = QHBoxLayout()
            edit = QLineEdit()
            edit.setObjectName(f"prediction_{q.id}")
            edit.setPlaceholderText(placeholder_for(q))
            edit.setAccessibleName(f"prediction for question {number}")
            lock = QPushButton("Lock in")
            lock.setObjectName(f"lock_{q.id}")
            lock.clicked.connect(lambda _=False, q=q: self._on_lock_clicked(q))
            edit.returnPressed.connect(lambda q=q: self._on_lock_clicked(q))
            row.addWidget(edit, 1)
            row.addWidget(lock)
            v.addLayout(row)
            self.prediction_edits[q.id] = edit
        v.addWidget(fb)
        return box

    def show_feedback(self, q: Question, fb: Feedback, scored: bool = True) -> None:
        """Show a graded answer and count it (only a question's first answer scores; a
        practice guess, made after the answer was on screen, never does)."""
        label = self.feedback[q.id]
        practice = "" if scored else " (practice: not scored)"
        label.setText(("✓ " if fb.correct else "✗ ") + inline_markdown(fb.text) + practice)
        label.setStyleSheet(f"color: {self.theme.ok if fb.correct else self.theme.bad};")
        if scored:
            self.score.record(q.id, fb.correct)
        else:
            self.score.record_practice(q.id, fb.correct)
        self._update_score()
        self.ensureWidgetVisible(label)  # the verdict is what the learner looks for next

    def show_note(self, question_id: str, text: str, bad: bool = False) -> None:
        label = self.feedback[question_id]
        label.setText(inline_markdown(text))
        label.setStyleSheet(f"color: {self.theme.bad};" if bad else "")
        self.ensureWidgetVisible(label)

    def _on_check_clicked(self, q: Question, group: QButtonGroup) -> None:
        picked = group.checkedId()
        if picked < 0:
            self.show_note(q.id, "Pick an answer first.")
            return
        self.show_feedback(q, grade_choice(q, picked))

    def answer(self, question_id: str, choice: int) -> None:
        """Pick and check choice ``choice`` as written in lesson.toml, wherever it is shown
        (keyboard users and tests)."""
        q = next(q for q in self.questions if q.id == question_id)
        group = self.groups[question_id]
        group.button(choice).setChecked(True)
        self._on_check_clicked(q, group)

    def _on_lock_clicked(self, q: Question) -> None:
        try:
            value = parse_prediction(self.prediction_edits[q.id].text())
        except ValueError as exc:
            self.show_note(q.id, f"Enter a number: {exc}.", bad=True)
            return
        self.prediction_locked.emit(q, value)

    def _update_score(self) -> None:
        self.score_label.setText(self.score.text(len(self.questions)))
        self.score_changed.emit(self.score.correct, len(self.questions))
        if self.score.passed(len(self.questions)):
            self.passed.emit()
