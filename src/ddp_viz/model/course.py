"""The course: every lesson folder under assets/lessons/, in order, and what is done."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ddp_viz.model import registry
from ddp_viz.model.assets import asset
from ddp_viz.model.lesson import Lesson, LessonError, load_lesson_folder

DEFAULT_LESSON = "ddp-pattern"


@dataclass
class Course:
    lessons: list[Lesson]
    done: set[str] = field(default_factory=set)
    why_this_order: str = ""  # shown in the course view (assets/lessons/course.toml)

    def __iter__(self) -> Iterator[Lesson]:
        return iter(self.lessons)

    def __len__(self) -> int:
        return len(self.lessons)

    @property
    def ids(self) -> list[str]:
        return [lesson.id for lesson in self.lessons]

    def get(self, lesson_id: str) -> Lesson:
        for lesson in self.lessons:
            if lesson.id == lesson_id:
                return lesson
        raise LessonError(f"no lesson {lesson_id!r}; lessons are {', '.join(self.ids)}")

    def index(self, lesson_id: str) -> int:
        return self.ids.index(lesson_id)

    def next(self, lesson_id: str) -> Lesson | None:
        i = self.index(lesson_id) + 1
        return self.lessons[i] if i < len(self.lessons) else None

    def previous(self, lesson_id: str) -> Lesson | None:
        i = self.index(lesson_id) - 1
        return self.lessons[i] if i >= 0 else None

    def mark_done(self, lesson_id: str) -> None:
        self.done.add(lesson_id)

    def missing_prerequisites(self, lesson_id: str) -> list[str]:
        return [p for p in self.get(lesson_id).prerequisites if p not in self.done]


def lesson_folders() -> list[Path]:
    """Where lessons are: the app's own, then each folder ``DDP_VIZ_LESSONS_PATH`` lists (as
    PATH does): a course's own lessons, beside the kinds ``DDP_VIZ_KINDS_PATH`` adds. With
    ``DDP_VIZ_LESSONS_ONLY`` set (``--lessons-only``), those folders instead of the app's."""
    extra = [Path(p) for p in os.environ.get("DDP_VIZ_LESSONS_PATH", "").split(os.pathsep) if p]
    if extra and os.environ.get("DDP_VIZ_LESSONS_ONLY"):
        return extra
    return [asset("lessons"), *extra]


def first_lesson(course: Course, wanted: str = "") -> str:
    """``wanted`` if the course has it, else the app's first lesson, else the course's first
    (a lecturer's course of their own lessons only)."""
    for lesson_id in (wanted, DEFAULT_LESSON):
        if lesson_id and lesson_id in course.ids:
            return lesson_id
    return course.ids[0]


def load_course(folder: Path | None = None, done: Iterable[str] = ()) -> Course:
    """Every folder holding a ``lesson.toml``, sorted by ``order`` then id."""
    folders = [folder] if folder is not None else lesson_folders()
    lessons = [
        load_lesson_folder(p)
        for f in folders
        for p in sorted(f.iterdir())
        if (p / "lesson.toml").is_file()
    ]
    folder = folders[0]
    if not lessons:
        raise LessonError(f"no lessons found in {folder}")
    lessons.sort(key=lambda lesson: (lesson.order, lesson.id))
    ids = {lesson.id for lesson in lessons}
    for lesson in lessons:
        unknown = [p for p in lesson.prerequisites if p not in ids]
        if unknown:
            raise LessonError(f"lesson {lesson.id}: unknown prerequisites {unknown}")
    about = folder / "course.toml"
    why = tomllib.loads(about.read_text(encoding="utf-8")) if about.is_file() else {}
    return Course(
        lessons, done={d for d in done if d in ids}, why_this_order=why.get("why_this_order", "")
    )


def load_lesson(lesson_id: str = DEFAULT_LESSON) -> Lesson:
    return load_lesson_folder(asset("lessons", lesson_id))


def lesson_for(scenario: dict) -> str:
    """The lesson whose stage shows what a scenario is about (``ddp-viz run --scenario F``
    without ``--lesson``): the all-reduce, uneven inputs, state DDP does not average, gradient
    accumulation, a sampler, buckets, an MLP; the DDP pattern otherwise."""
    model = scenario.get("model", {})
    kind = registry.kind_of(scenario)
    if kind is not None and kind.page is not None:  # a page of its own, outside the course
        return kind.id
    course = load_course()
    if kind is not None and not kind.default:  # the first lesson of the kind it is about
        found = next((lesson.id for lesson in course if lesson.kind == kind.id), "")
        return first_lesson(course, found)
    if model.get("kind") == "mlp":  # DDP training of an MLP: every parameter's gradient
        return first_lesson(course, "every-parameter")
    return first_lesson(course)
