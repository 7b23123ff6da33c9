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
