"""A learner who follows the course never meets a term in a quiz or a listing before the lesson
that introduces it (each lesson.toml declares the terms it introduces)."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_course
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.rules.in_course import quiz_and_listing as text_of
from ddp_viz.model.rules.in_course import term_pattern as pattern

COURSE = load_course()


def too_early(lessons: list[Lesson]) -> list[str]:
    """Every term a lesson's quiz or listing uses before the lesson that introduces it."""
    found = []
    for i, lesson in enumerate(lessons):
        text = text_of(lesson)
        for later in lessons[i + 1 :]:
            for term in later.terms:
                if pattern(term).search(text):
                    found.append(f"{lesson.id} uses {term!r}, introduced by {later.id}")
    return found


def test_every_lesson_introduces_terms_and_no_term_twice() -> None:
    assert all(lesson.terms for lesson in COURSE)
    every = [t for lesson in COURSE for t in lesson.terms]  # "rank" the word, "RANK" the variable
    assert len(every) == len(set(every))


def test_no_quiz_or_listing_uses_a_term_before_its_lesson() -> None:
    assert too_early(COURSE.lessons) == []


def test_the_check_finds_a_term_used_too_early() -> None:
    # the buckets lesson put before the first lesson: its quiz uses the first lesson's terms
    first, buckets = COURSE.get("ddp-pattern"), COURSE.get("buckets")
    assert any("all-reduce" in p for p in too_early([buckets, first]))


@pytest.mark.parametrize(
    ("term", "text", "found"),
    [
        ("bucket", "two buckets", True),
        ("bucket", "bucket_cap_mb = 25", False),
        ("RANK", "LOCAL_RANK=0", False),
        ("RANK", "os.environ['RANK']", True),
        ("ring", "during backward", False),
        ("env://", 'init_method="env://"', True),
    ],
)
def test_a_term_matches_whole_words_only(term, text, found) -> None:
    assert bool(pattern(term).search(text)) == found
