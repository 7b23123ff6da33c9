"""The course rules' every problem, word for word (pure): each rule's case where it must speak,
with the lesson, the place, the message and the fix it gives, and the case beside it where it
must stay quiet. The lessons are the course's own, changed here."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.course import load_course
from ddp_viz.model.quiz import Question
from ddp_viz.model.rules.base import Problem
from ddp_viz.model.rules.in_course import (
    _prerequisites,
    _quiz_shape,
    _rank_words,
    _term_order,
    _terms,
    choice_questions,
    course_problems,
    term_pattern,
    worst_rank,
)

COURSE = list(load_course())
A, B, C = COURSE[0], COURSE[1], COURSE[2]


def changed(lesson, **fields):  # type: ignore[no-untyped-def]
    return dataclasses.replace(lesson, **fields)


def choice(i: int, choices: tuple[str, ...], answer: int) -> Question:
    return Question(f"q{i}", "choice", "?", "", choices=choices, answer=answer)


def test_a_lesson_without_terms_and_a_term_two_others_introduce() -> None:
    bare = changed(A, terms=())
    assert list(_terms(bare, [bare, B])) == [
        Problem(
            A.id,
            "terms",
            "lesson.toml",
            "introduces no term",
            'list the terms the lesson teaches first: `terms = ["…"]`',
        )
    ]
    one, two = changed(B, terms=("zebra",)), changed(C, terms=("zebra",))
    mine = changed(A, terms=("zebra", "okapi"))
    assert list(_terms(mine, [mine, one, two])) == [
        Problem(
            A.id,
            "terms",
            "term 'zebra'",
            f"is introduced by {B.id}, {C.id} too",
            "keep the term in the lesson that teaches it first",
        )
    ]
    assert list(_terms(mine, [mine, changed(B, terms=("gnu",))])) == []


@pytest.mark.parametrize(
    ("term", "text", "found"),
    [
        ("bucket", "two buckets", True),
        ("bucket", "Bucket one", True),
        ("bucket", "bucket_cap_mb", False),
        ("bucket", "rebucket", False),
        ("all-reduce", "all-reduces run", True),
        ("RANK", "os.environ['RANK']", True),
        ("RANK", "the rank", False),
        ("RANK", "RANKS", False),
        ("set_rng_state", "torch.set_rng_state(s)", True),
        ("set_rng_state", "SET_RNG_STATE", False),
        ("env://", "init_method='env://'", True),
    ],
)
def test_a_term_is_found_as_a_whole_word(term: str, text: str, found: bool) -> None:
    assert bool(term_pattern(term).search(text)) == found


def test_a_term_met_before_the_lesson_that_introduces_it() -> None:
    later = changed(C, terms=("zebra",))
    question = Question("q", "choice", "Do zebras all-reduce?", "", choices=("y", "n"), answer=0)
    early = changed(A, questions=(*A.questions, question))
    assert list(_term_order(early, [early, B, later])) == [
        Problem(
            A.id,
            "term-order",
            "term 'zebra'",
            f"is used before {C.id}, the lesson that introduces it",
            "say it in other words here, or move the lesson after that one",
        )
    ]
    # after it, or outside the course: nothing to say
    assert list(_term_order(early, [later, early])) == []
    assert list(_term_order(early, [B, later])) == []


def test_prerequisites_unknown_itself_or_later() -> None:
    course = [A, B, C]
    ids = ", ".join(x.id for x in course)
    lost = changed(B, prerequisites=("nowhere",))
    assert list(_prerequisites(lost, course)) == [
        Problem(
            B.id,
            "prerequisites",
            "prerequisite 'nowhere'",
            "is no lesson of the course",
            f"use one of: {ids}",
        )
    ]
    itself = changed(B, prerequisites=(B.id,))
    assert list(_prerequisites(itself, course)) == [
        Problem(
            B.id,
            "prerequisites",
            f"prerequisite {B.id!r}",
            "is this lesson itself",
            "name the lessons a learner should take before this one",
        )
    ]
    ahead = changed(B, prerequisites=(C.id, A.id))
    assert list(_prerequisites(ahead, course)) == [
        Problem(
            B.id,
            "prerequisites",
            f"prerequisite {C.id!r}",
            "comes after this lesson in the course",
            "give this lesson a larger `order` than its prerequisites",
        )
    ]


def test_a_length_rank_that_answers_too_many_of_a_lessons_questions() -> None:
    """Four questions, the second longest right in two (50%), the longest in one (25%)."""
    second = [
        choice(0, ("aaaa", "bbb", "c"), 1),
        choice(1, ("aaaa", "bbb", "c"), 1),
        choice(2, ("aaaa", "bbb", "c"), 0),
        choice(3, ("aaaa", "bbb", "c"), 2),
    ]
    lesson = changed(A, questions=tuple(second))
    assert list(_quiz_shape(lesson, [lesson])) == [
        Problem(
            A.id,
            "quiz-shape",
            "the choice questions",
            "the longest but 1 choice is right in 50% of them",
            "vary which choice is longest: make a wrong one the longest, or the answer short",
        )
    ]
    # three such questions are too few for the length ranks to be judged
    assert list(_quiz_shape(changed(A, questions=tuple(second[:3])), [])) == []
    # the first rule speaks alone when the answer is so often the longest
    longest = changed(A, questions=tuple(choice(i, ("aaaa", "b", "c"), 0) for i in range(4)))
    (only,) = _quiz_shape(longest, [])
    assert (only.message, only.fix) == (
        "the answer is a longest choice in 4 of 4",
        "make a wrong choice the longest, or the answer shorter, in some of them",
    )


def test_the_course_as_a_whole_and_the_words_for_a_rank() -> None:
    shortest = changed(A, questions=tuple(choice(i, ("aaa", "bb", "c"), 2) for i in range(3)))
    assert course_problems([shortest]) == [
        Problem(
            "the course",
            "quiz-shape",
            "every choice question",
            "the shortest choice is right in 100% of them",
            "vary which choice is longest in the lessons whose answer it is",
        )
    ]
    spread = [
        choice(0, ("aaa", "bb", "c"), 0),
        choice(1, ("aaa", "bb", "c"), 1),
        choice(2, ("aaa", "bb", "c"), 2),
    ]
    assert course_problems([changed(A, questions=tuple(spread))]) == []
    assert _rank_words("longest+0") == "the longest"
    assert _rank_words("shortest+2") == "the shortest but 2"
    assert worst_rank([]) == ("", 0.0)


def test_only_answered_choice_questions_count() -> None:
    predict = Question("p", "predict", "?", "")
    unanswered = Question("u", "choice", "?", "", choices=("a", "b"), answer=None)
    lesson = changed(A, questions=(predict, unanswered, choice(0, ("a", "bb"), 1)))
    assert choice_questions([lesson]) == [(("a", "bb"), 1)]
