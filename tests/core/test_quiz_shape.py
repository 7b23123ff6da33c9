"""A quiz no length rule passes: the right answer of the choice questions is spread over the
choices' lengths, so "always pick the longest" (or the second-longest, …, or the shortest)
is right in at most 40% of the questions, course-wide and in every lesson with four or more.

A choice that ties in length with others shares their ranks: a learner picking "the longest"
among equals picks one at random, so the answer holds each tied rank with weight 1 / ties.
"""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_course
from ddp_viz.model.rules.in_course import SHAPE_FROM as MIN_QUESTIONS
from ddp_viz.model.rules.in_course import SHAPE_LIMIT as LIMIT
from ddp_viz.model.rules.in_course import choice_questions, rank_weights, worst_rank

COURSE = load_course()


def test_a_tie_shares_its_ranks_and_the_shortest_counts_from_the_end() -> None:
    assert rank_weights(["aaaa", "bb", "cc", "d"], 0) == {"longest+0": 1.0, "shortest+3": 1.0}
    assert rank_weights(["aaaa", "bb", "cc", "d"], 1) == {
        "longest+1": 0.5,
        "longest+2": 0.5,
        "shortest+2": 0.5,
        "shortest+1": 0.5,
    }
    assert rank_weights(["3", "6", "9"], 2)["longest+0"] == pytest.approx(1 / 3)


def test_the_rule_fails_a_quiz_whose_answer_is_always_second_longest() -> None:
    padded = [(("a" * 40, "b" * 30, "c" * 10, "d" * 12), 1)] * 3
    padded += [(("a" * 10, "b" * 30, "c" * 20, "d" * 12), 0)] * 2
    rank, share = worst_rank(padded)
    assert (rank, share) == ("longest+1", 0.6) and share > LIMIT
    spread = padded[:2] + [(("a" * 10, "b" * 30, "c" * 20, "d" * 12), k) for k in (0, 1, 3)]
    assert worst_rank(spread)[1] <= LIMIT


def test_no_length_rank_answers_more_than_two_fifths_of_the_course() -> None:
    questions = choice_questions(COURSE.lessons)
    assert len(questions) >= 40
    rank, share = worst_rank(questions)
    assert share <= LIMIT, f"the {rank} choice is right in {share:.0%} of the course's questions"


BIG = [
    lesson
    for lesson in COURSE.lessons
    if sum(q.kind == "choice" for q in lesson.questions) >= MIN_QUESTIONS
]


@pytest.mark.parametrize("lesson", BIG, ids=lambda lesson: lesson.id)
def test_no_length_rank_answers_more_than_two_fifths_of_a_lesson(lesson) -> None:
    rank, share = worst_rank(choice_questions([lesson]))
    assert share <= LIMIT, f"{lesson.id}: the {rank} choice is right in {share:.0%}"


def _lesson_with(choices_answers):  # type: ignore[no-untyped-def]
    from ddp_viz.model.quiz import Question

    lesson = load_course().get("ddp-pattern")
    questions = [
        Question(id=f"q{i}", kind="choice", prompt="?", choices=list(c), answer=a, explain="")
        for i, (c, a) in enumerate(choices_answers)
    ]
    return lesson.__class__(**{**lesson.__dict__, "questions": questions})


@pytest.mark.parametrize(
    ("questions", "flagged"),
    [
        # one of three answers is the longest: a third, allowed
        (
            [(("long answer", "b", "c"), 0), (("a", "long wrong", "c"), 0), (("a", "bb", "c"), 2)],
            False,
        ),
        # one of two: more than a third, however few the questions
        ([(("long answer", "b", "c"), 0), (("a", "long wrong", "c"), 0)], True),
        # a tie for longest counts as the longest
        ([(("aaa", "bbb", "c"), 0), (("aaa", "b", "c"), 1), (("a", "bb", "ccc"), 0)], False),
        ([(("aaa", "bbb", "c"), 0), (("aaa", "bbb", "c"), 1), (("a", "bb", "ccc"), 0)], True),
    ],
)
def test_a_lesson_whose_answer_is_often_a_longest_choice_is_flagged(questions, flagged) -> None:
    from ddp_viz.model.rules.in_course import _quiz_shape

    lesson = _lesson_with(questions)
    found = list(_quiz_shape(lesson, [lesson]))
    assert bool(found) == flagged
    if flagged:
        longest = sum(len(c[a]) == max(map(len, c)) for c, a in questions)
        assert (
            found[0].message == f"the answer is a longest choice in {longest} of {len(questions)}"
        )
