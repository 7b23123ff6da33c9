"""The quiz cannot be passed by its shape: choices are shown in a per-learner shuffled order,
graded by the real answer, and no lesson's answers stand out by length or position."""

from __future__ import annotations

import tomllib
from collections import Counter
from pathlib import Path

import pytest

from ddp_viz.model.assets import asset
from ddp_viz.model.quiz import Question, display_order, grade_choice, parse_questions

LESSONS = asset("lessons")
# learners whose shuffles the course is checked under: the scripted window's ("") and others
LEARNERS = ("", "a3f09c1e", "learner-2", "0")


def choice_questions(folder: Path) -> dict[str, list[Question]]:
    """Every lesson's choice questions, read straight from each lesson.toml under ``folder``."""
    out = {}
    for toml in sorted(folder.glob("*/lesson.toml")):
        raws = tomllib.loads(toml.read_text(encoding="utf-8")).get("question", [])
        out[toml.parent.name] = [q for q in parse_questions(raws) if q.kind == "choice"]
    return out


def shape_problems(folder: Path) -> list[str]:
    """What gives answers away: a lesson whose answer is the longest option (by characters) in
    more than a third of its choice questions, or a displayed position that holds most of the
    course's answers for some learner."""
    problems = []
    course = choice_questions(folder)
    for lesson, questions in course.items():
        longest = [q.id for q in questions if len(q.choices[q.answer]) == max(map(len, q.choices))]
        if questions and len(longest) * 3 > len(questions):
            problems.append(f"{lesson}: the answer is the longest option in {longest}")
    every = [q for questions in course.values() for q in questions]
    for learner in LEARNERS:
        shown_at = Counter(display_order(q, learner).index(q.answer) for q in every)
        position, count = shown_at.most_common(1)[0]
        if count * 2 > len(every):
            problems.append(f"learner {learner!r}: {count} of {len(every)} answers at {position}")
    return problems


def test_no_lesson_gives_its_answers_away_by_length_or_position() -> None:
    assert shape_problems(LESSONS) == []


def test_the_check_catches_answers_that_are_always_first_and_longest(tmp_path) -> None:
    # a lesson written the way the course once was: the answer first, and the longest
    lesson = tmp_path / "told" / "lesson.toml"
    lesson.parent.mkdir()
    questions = "".join(
        f'[[question]]\nid = "q{i}"\nkind = "choice"\nprompt = "?"\nexplain = ""\nanswer = 0\n'
        f'choices = ["the right one, with its reason", "wrong", "also wrong"]\n'
        for i in range(3)
    )
    lesson.write_text(questions, encoding="utf-8")
    assert any("longest option" in p for p in shape_problems(tmp_path))


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
