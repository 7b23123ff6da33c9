"""The rules about a lesson in its course: its terms, their order, its prerequisites, and a
quiz no answer-length rule passes."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from ddp_viz.model.lesson import Lesson
from ddp_viz.model.rules.base import Problem, found, rule

SHAPE_LIMIT = 0.40  # the largest share of choice questions one length rank may answer
SHAPE_FROM = 4  # choice questions from which a lesson's own quiz is judged for its shape


def _terms(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    if not lesson.terms:
        yield found(
            lesson,
            "terms",
            "lesson.toml",
            "introduces no term",
            'list the terms the lesson teaches first: `terms = ["…"]`',
        )
    for term in lesson.terms:
        others = [other.id for other in course if other.id != lesson.id and term in other.terms]
        if others:
            yield found(
                lesson,
                "terms",
                f"term {term!r}",
                f"is introduced by {', '.join(others)} too",
                "keep the term in the lesson that teaches it first",
            )


rule(
    "terms",
    """A lesson introduces at least one term (`terms = […]`), and no other lesson introduces the
    same term.""",
    _terms,
)


def term_pattern(term: str) -> re.Pattern[str]:
    """A whole word or name: ``bucket`` finds "buckets" but not "bucket_cap_mb"; a term with
    a capital or a symbol (``RANK``, ``env://``) matches only as written, a plain lowercase
    word in any case."""
    plain = term.islower() and term.replace(" ", "").replace("-", "").isalpha()
    ends = r"(?:s|es)?(?![\w])" if plain else r"(?![\w])"
    return re.compile(r"(?<![\w])" + re.escape(term) + ends, re.IGNORECASE if plain else 0)


def quiz_and_listing(lesson: Lesson) -> str:
    """What the learner reads in the lesson's quiz and code listing."""
    parts = [lesson.code_with(None)]
    for q in lesson.questions:
        parts += [q.prompt, q.explain, *q.choices, *q.why_not]
    return "\n".join(parts)


def _term_order(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    ids = [other.id for other in course]
    if lesson.id not in ids:
        return
    text = None
    for later in course[ids.index(lesson.id) + 1 :]:
        for term in later.terms:
            text = quiz_and_listing(lesson) if text is None else text
            if term_pattern(term).search(text):
                yield found(
                    lesson,
                    "term-order",
                    f"term {term!r}",
                    f"is used before {later.id}, the lesson that introduces it",
                    "say it in other words here, or move the lesson after that one",
                )


rule(
    "term-order",
    """A learner who follows the course never meets a term in a quiz or a listing before the
    lesson that introduces it: a lesson's quiz and listing use no term a later lesson
    introduces (whole words: `bucket` finds "buckets", not "bucket_cap_mb").""",
    _term_order,
)


def _prerequisites(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    ids = [other.id for other in course]
    for p in lesson.prerequisites:
        if p not in ids:
            yield found(
                lesson,
                "prerequisites",
                f"prerequisite {p!r}",
                "is no lesson of the course",
                f"use one of: {', '.join(ids)}",
            )
        elif p == lesson.id:
            yield found(
                lesson,
                "prerequisites",
                f"prerequisite {p!r}",
                "is this lesson itself",
                "name the lessons a learner should take before this one",
            )
        elif lesson.id in ids and ids.index(p) > ids.index(lesson.id):
            yield found(
                lesson,
                "prerequisites",
                f"prerequisite {p!r}",
                "comes after this lesson in the course",
                "give this lesson a larger `order` than its prerequisites",
            )


rule(
    "prerequisites",
    "Each prerequisite names another lesson of the course, one that comes before this one.",
    _prerequisites,
)


# --- a quiz no length rule passes --------------------------------------------------------------
def rank_weights(choices: Sequence[str], answer: int) -> dict[str, float]:
    """How much of the answer each length rank holds, counted from the longest
    ("longest+0", "longest+1", …) and from the shortest ("shortest+0", …). A choice that ties
    in length with others shares their ranks: a learner picking "the longest" among equals
    picks one at random, so the answer holds each tied rank with weight 1 / ties."""
    lengths = [len(c) for c in choices]
    mine = lengths[answer]
    above = sum(n > mine for n in lengths)  # strictly longer choices
    ties = sum(n == mine for n in lengths)
    weights: dict[str, float] = {}
    for k in range(above, above + ties):
        weights[f"longest+{k}"] = 1 / ties
        weights[f"shortest+{len(lengths) - 1 - k}"] = 1 / ties
    return weights


def worst_rank(questions: Sequence[tuple[Sequence[str], int]]) -> tuple[str, float]:
    """The length rank that holds the right answer most often, and its share."""
    held: dict[str, float] = defaultdict(float)
    for choices, answer in questions:
        for rank, weight in rank_weights(choices, answer).items():
            held[rank] += weight
    if not held:
        return "", 0.0
    # a rank is named from the nearer end: "the shortest", not "the longest but 2"
    rank = max(held, key=lambda r: (held[r], -int(r.partition("+")[2])))
    return rank, held[rank] / len(questions)


def choice_questions(lessons: Iterable[Lesson]) -> list[tuple[tuple[str, ...], int]]:
    return [
        (tuple(q.choices), q.answer)
        for lesson in lessons
        for q in lesson.questions
        if q.kind == "choice" and q.answer is not None
    ]


def _rank_words(rank: str) -> str:
    side, _, k = rank.partition("+")
    n = int(k)
    return f"the {side}" if n == 0 else f"the {side} but {n}"


def _quiz_shape(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    mine = choice_questions([lesson])
    # the rule a learner tries first: "pick the longest" (a tie for longest counts: picking
    # among the longest is still that rule), in any lesson with choice questions
    longest = [len(c[a]) == max(map(len, c)) for c, a in mine]
    if sum(longest) * 3 > len(mine):
        yield found(
            lesson,
            "quiz-shape",
            "the choice questions",
            f"the answer is a longest choice in {sum(longest)} of {len(mine)}",
            "make a wrong choice the longest, or the answer shorter, in some of them",
        )
        return
    if len(mine) < SHAPE_FROM:
        return
    rank, share = worst_rank(mine)
    if share > SHAPE_LIMIT:
        yield found(
            lesson,
            "quiz-shape",
            "the choice questions",
            f"{_rank_words(rank)} choice is right in {share:.0%} of them",
            "vary which choice is longest: make a wrong one the longest, or the answer short",
        )


rule(
    "quiz-shape",
    f"""No answer-length rule passes the quiz: in no lesson is the answer a longest choice
    (a tie counts) in more than a third of its choice questions; and in a lesson with
    {SHAPE_FROM} or more choice questions, and across the course, no length rank (always the
    longest choice, the second longest, …, the shortest) is the right answer in more than
    {SHAPE_LIMIT:.0%} of them.""",
    _quiz_shape,
)


def course_problems(course: Sequence[Lesson]) -> list[Problem]:
    """What is wrong with the course as a whole (its quiz's shape across every lesson)."""
    rank, share = worst_rank(choice_questions(course))
    if share <= SHAPE_LIMIT:
        return []
    return [
        Problem(
            "the course",
            "quiz-shape",
            "every choice question",
            f"{_rank_words(rank)} choice is right in {share:.0%} of them",
            "vary which choice is longest in the lessons whose answer it is",
        )
    ]
