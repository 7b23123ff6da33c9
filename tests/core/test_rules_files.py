"""The rules about a lesson's own files, every problem word for word (pure): each rule's case
where it must speak, with the lesson, the place, the message and the fix, beside the case
where it must stay quiet. The lesson is the course's first, changed here."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.course import load_course
from ddp_viz.model.quiz import Question
from ddp_viz.model.rules.base import Problem
from ddp_viz.model.rules.files import (
    MIN_QUESTIONS,
    _highlight,
    _kind,
    _phases,
    _questions,
    _scenario,
    _texts,
)
from ddp_viz.model.scenes import phases_of

LESSON = load_course().get("ddp-pattern")
ID = LESSON.id


def changed(**fields):  # type: ignore[no-untyped-def]
    return dataclasses.replace(LESSON, **fields)


def said(rule, lesson) -> list[Problem]:  # type: ignore[no-untyped-def]
    return list(rule(lesson, [lesson]))


def test_the_course_lesson_meets_every_files_rule() -> None:
    for rule in (_texts, _phases, _highlight, _questions, _scenario, _kind):
        assert said(rule, LESSON) == [], rule.__name__


def test_an_empty_title_summary_or_text_is_named_each() -> None:
    assert said(_texts, changed(title=" ", summary="", markdown="\n")) == [
        Problem(
            ID,
            "texts",
            "lesson.toml",
            "`title` is empty",
            'add `title = "…"` at the top of lesson.toml',
        ),
        Problem(
            ID,
            "texts",
            "lesson.toml",
            "`summary` is empty",
            'add `summary = "…"` (one line, shown in the course list)',
        ),
        Problem(ID, "texts", "lesson.md", "the lesson's text is empty", "write lesson.md"),
    ]
    assert said(_texts, changed(summary="x")) == []


def test_a_phase_without_lines_or_a_caption() -> None:
    first, *rest = phases_of(LESSON.scene)
    highlight = {p: v for p, v in LESSON.highlight.items() if p != first}
    captions = {**LESSON.phase_text, rest[0]: "  "}
    assert said(_phases, changed(highlight=highlight, phase_text=captions)) == [
        Problem(
            ID,
            "phases",
            f"phase {first}",
            "highlights no line of the listing",
            f"add `{first} = [line numbers or texts]` under [code.phases]",
        ),
        Problem(
            ID,
            "phases",
            f"phase {rest[0]}",
            "has no caption",
            f'add `{rest[0]} = "…"` under [phase_text]',
        ),
    ]
    # a text that highlights nothing is no line either
    empty = {**LESSON.highlight, first: []}
    assert [p.message for p in said(_phases, changed(highlight=empty))] == [
        "highlights no line of the listing"
    ]


def test_a_caption_under_a_name_the_scene_has_no_phase_of_is_named_with_the_nearest() -> None:
    phases = phases_of(LESSON.scene)
    first = phases[0]
    captions = {k: v for k, v in LESSON.phase_text.items() if k != first}
    misspelt = {**captions, first + "x": "a caption no phase shows", "zzz": "another"}
    known = ", ".join(phases)
    assert said(_phases, changed(phase_text=misspelt)) == [
        Problem(
            ID,
            "phases",
            f"[phase_text] {first}x",
            f"is not a phase of the {LESSON.scene} scene ({known})",
            f"rename it `{first}`",
        ),
        Problem(
            ID,
            "phases",
            "[phase_text] zzz",
            f"is not a phase of the {LESSON.scene} scene ({known})",
            "remove it, or name one of those phases",
        ),
        Problem(
            ID,
            "phases",
            f"phase {first}",
            "has no caption",
            f'add `{first} = "…"` under [phase_text]',
        ),
    ]
    # every key a phase of the scene: nothing said
    assert said(_phases, changed(phase_text=dict(LESSON.phase_text))) == []


def test_a_highlight_outside_the_listing() -> None:
    lines = len(LESSON.code.splitlines())
    marks = {"shards": [1, lines], "local": [0, lines + 1, "no such text here"]}
    assert said(_highlight, changed(highlight=marks)) == [
        Problem(
            ID,
            "highlight",
            "phase local",
            f"line 0 is outside the listing's {lines} lines",
            "number the listing's lines from 1, as written in lesson.toml",
        ),
        Problem(
            ID,
            "highlight",
            "phase local",
            f"line {lines + 1} is outside the listing's {lines} lines",
            "number the listing's lines from 1, as written in lesson.toml",
        ),
        Problem(
            ID,
            "highlight",
            "phase local",
            "the text 'no such text here' is not in the listing",
            "copy the text from the listing exactly",
        ),
    ]


def test_too_few_questions_and_no_prediction() -> None:
    choices = tuple(
        Question(f"q{i}", "choice", "?", "", choices=("a", "b"), answer=0) for i in range(3)
    )
    assert said(_questions, changed(questions=choices)) == [
        Problem(
            ID,
            "questions",
            "lesson.toml",
            f"3 question(s); a lesson needs {MIN_QUESTIONS} or more",
            "add [[question]] tables",
        ),
        Problem(
            ID,
            "questions",
            "lesson.toml",
            "no prediction question",
            'add a [[question]] with kind = "predict" and a [question.quantity] table',
        ),
    ]
    four = (*choices, dataclasses.replace(choices[0], id="q3"))
    assert [p.message for p in said(_questions, changed(questions=four))] == [
        "no prediction question"
    ]


def test_a_bad_scenario_names_its_file_and_field(tmp_path) -> None:
    bad = tmp_path / "mine.toml"
    bad.write_text("world_size = 0\n", encoding="utf-8")
    (p,) = said(_scenario, changed(scenario_file=bad))
    assert (p.lesson, p.rule, p.where, p.fix) == (
        ID,
        "scenario",
        "mine.toml: world_size",
        "fix `world_size`",
    )
    assert p.message.startswith("must be"), p.message


def test_a_scene_its_kind_does_not_draw() -> None:
    kind = LESSON.run_kind()
    draws = ", ".join(kind.scenes)
    assert said(_kind, changed(kind=kind.id, scene="nowhere")) == [
        Problem(
            ID,
            "kind",
            "lesson.toml",
            f"the kind {kind.id} draws {draws}, not the scene 'nowhere'",
            "set `scene` to one of its kind's scenes, or `kind` to the kind that draws it",
        )
    ]
    assert said(_kind, changed(kind="", scene="nowhere")) == [
        Problem(
            ID,
            "kind",
            "lesson.toml",
            "the kind (none) draws nothing, not the scene 'nowhere'",
            "set `scene` to one of its kind's scenes, or `kind` to the kind that draws it",
        )
    ]


def test_a_phase_whose_marks_name_no_line_of_the_listing_highlights_none() -> None:
    first = phases_of(LESSON.scene)[0]
    marks = {**LESSON.highlight, first: ["a text the listing does not have"]}
    assert [(p.where, p.message) for p in said(_phases, changed(highlight=marks))] == [
        (f"phase {first}", "highlights no line of the listing")
    ]


def test_a_lesson_without_a_scenario_file_runs_the_defaults_and_passes() -> None:
    assert said(_scenario, changed(scenario_file=None)) == []


def test_a_kind_of_several_scenes_names_each(monkeypatch) -> None:
    from types import SimpleNamespace

    from ddp_viz.model.lesson import Lesson

    two = SimpleNamespace(id="two", scenes={"ring": None, "naive": None})
    monkeypatch.setattr(Lesson, "run_kind", lambda self: two)
    (p,) = said(_kind, changed(kind="two", scene="nowhere"))
    assert p.message == "the kind two draws ring, naive, not the scene 'nowhere'"
