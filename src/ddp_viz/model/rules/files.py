"""The rules about a lesson's own files: its texts, phases, highlights, quiz and scenario."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.rules.base import Problem, found, rule

MIN_QUESTIONS = 4  # a lesson's quiz: at least this many questions, a prediction among them


def _texts(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    for name, value, fix in (
        ("title", lesson.title, 'add `title = "…"` at the top of lesson.toml'),
        ("summary", lesson.summary, 'add `summary = "…"` (one line, shown in the course list)'),
    ):
        if not value.strip():
            yield found(lesson, "texts", "lesson.toml", f"`{name}` is empty", fix)
    if not lesson.markdown.strip():
        yield found(lesson, "texts", "lesson.md", "the lesson's text is empty", "write lesson.md")


rule(
    "texts",
    "A lesson has a title and a summary in lesson.toml and its text in lesson.md.",
    _texts,
)


def _phases(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    from ddp_viz.model.scenes import phases_of

    phases = phases_of(lesson.scene)
    # a misspelt key is a caption no phase shows: named as such, not only as the phase's
    # missing caption, which would send the author looking for text they did write
    for key in lesson.phase_text:
        if key not in phases:
            near = difflib.get_close_matches(key, phases, n=1)
            yield found(
                lesson,
                "phases",
                f"[phase_text] {key}",
                f"is not a phase of the {lesson.scene} scene ({', '.join(phases)})",
                f"rename it `{near[0]}`" if near else "remove it, or name one of those phases",
            )
    for phase in phases:
        if not lesson.highlight.get(phase) or not lesson.lines_for(phase):
            yield found(
                lesson,
                "phases",
                f"phase {phase}",
                "highlights no line of the listing",
                f"add `{phase} = [line numbers or texts]` under [code.phases]",
            )
        if not lesson.phase_text.get(phase, "").strip():
            yield found(
                lesson,
                "phases",
                f"phase {phase}",
                "has no caption",
                f'add `{phase} = "…"` under [phase_text]',
            )


rule(
    "phases",
    """Every phase of the lesson's scene has listing lines to highlight (`[code.phases]`) and a
    sentence for the stage's caption (`[phase_text]`), and `[phase_text]` names no other.""",
    _phases,
)


def _highlight(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    lines = len(lesson.code.splitlines())
    shown = lesson.code_with(None)
    for phase, marks in lesson.highlight.items():
        for mark in marks:
            if isinstance(mark, int) and not 1 <= mark <= lines:
                yield found(
                    lesson,
                    "highlight",
                    f"phase {phase}",
                    f"line {mark} is outside the listing's {lines} lines",
                    "number the listing's lines from 1, as written in lesson.toml",
                )
            elif isinstance(mark, str) and mark not in shown:
                yield found(
                    lesson,
                    "highlight",
                    f"phase {phase}",
                    f"the text {mark!r} is not in the listing",
                    "copy the text from the listing exactly",
                )


rule(
    "highlight",
    """Every line number under `[code.phases]` is a line of the listing, and every text there
    appears in it.""",
    _highlight,
)


def _questions(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    n = len(lesson.questions)
    if n < MIN_QUESTIONS:
        yield found(
            lesson,
            "questions",
            "lesson.toml",
            f"{n} question(s); a lesson needs {MIN_QUESTIONS} or more",
            "add [[question]] tables",
        )
    if not any(q.kind == "predict" for q in lesson.questions):
        yield found(
            lesson,
            "questions",
            "lesson.toml",
            "no prediction question",
            'add a [[question]] with kind = "predict" and a [question.quantity] table',
        )


rule(
    "questions",
    f"""A lesson's quiz has at least {MIN_QUESTIONS} questions, and at least one of them is a
    prediction (`kind = "predict"`) graded from the learner's own run.""",
    _questions,
)


def _scenario(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    name = lesson.scenario_file.name if lesson.scenario_file else "scenario"
    try:
        lesson.scenario()
    except ScenarioError as err:
        yield found(lesson, "scenario", f"{name}: {err.field}", err.message, f"fix `{err.field}`")


rule(
    "scenario",
    """The lesson's scenario file is valid: every field is checked as the settings form checks
    it, with the rules of the kind of run it is.""",
    _scenario,
)


def _kind(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    kind = lesson.run_kind()
    if kind is None or lesson.scene not in kind.scenes:
        draws = ", ".join(kind.scenes) if kind is not None else "nothing"
        yield found(
            lesson,
            "kind",
            "lesson.toml",
            f"the kind {lesson.kind or '(none)'} draws {draws}, not the scene {lesson.scene!r}",
            "set `scene` to one of its kind's scenes, or `kind` to the kind that draws it",
        )


rule(
    "kind",
    """The lesson's scene is one its kind of run draws (`kind = "…"` names a folder under
    `ddp_viz/kinds/`; a lesson naming none shows DDP training).""",
    _kind,
)
