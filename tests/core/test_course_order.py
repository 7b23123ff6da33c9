"""The course as a list: finding a lesson (and the message when there is none), the lessons
before and after at both ends, prerequisites, where lessons are read from, which lesson a
scenario opens on, and a course folder loaded in order with its errors named."""

from __future__ import annotations

import shutil

import pytest

from ddp_viz.model.assets import asset
from ddp_viz.model.course import (
    Course,
    first_lesson,
    lesson_folders,
    lesson_for,
    load_course,
)
from ddp_viz.model.lesson import Lesson, LessonError


def made(*ids_and_prereqs: tuple[str, tuple[str, ...]]) -> Course:
    return Course(
        [Lesson(id=i, title=i, markdown="", code="", prerequisites=p) for i, p in ids_and_prereqs]
    )


ABC = made(("a", ()), ("b", ("a",)), ("c", ("a", "b")))


def test_a_course_finds_its_lessons_and_names_them_all_when_one_is_not_there() -> None:
    assert ABC.ids == ["a", "b", "c"] and len(ABC) == 3
    assert [lesson.id for lesson in ABC] == ["a", "b", "c"]
    assert ABC.get("b") is ABC.lessons[1] and ABC.index("c") == 2
    with pytest.raises(LessonError) as caught:
        ABC.get("z")
    assert str(caught.value) == "no lesson 'z'; lessons are a, b, c"


def test_the_lessons_before_and_after_stop_at_both_ends() -> None:
    assert ABC.next("a").id == "b" and ABC.next("b").id == "c" and ABC.next("c") is None
    assert ABC.previous("a") is None and ABC.previous("b").id == "a"
    assert ABC.previous("c").id == "b"


def test_missing_prerequisites_are_those_not_done_in_the_lessons_order() -> None:
    course = made(("a", ()), ("b", ("a",)), ("c", ("b", "a")))
    assert course.missing_prerequisites("c") == ["b", "a"]
    course.mark_done("a")
    assert course.missing_prerequisites("c") == ["b"] and course.done == {"a"}
    assert course.missing_prerequisites("a") == []


def test_a_lessons_path_adds_folders_after_the_apps_unless_only_those(monkeypatch) -> None:
    monkeypatch.delenv("DDP_VIZ_LESSONS_PATH", raising=False)
    monkeypatch.delenv("DDP_VIZ_LESSONS_ONLY", raising=False)
    assert lesson_folders() == [asset("lessons")]
    monkeypatch.setenv("DDP_VIZ_LESSONS_ONLY", "1")
    assert lesson_folders() == [asset("lessons")]  # only, but nothing named: the app's
    monkeypatch.setenv("DDP_VIZ_LESSONS_PATH", "/one::/two")
    assert [str(p) for p in lesson_folders()] == ["/one", "/two"]
    monkeypatch.delenv("DDP_VIZ_LESSONS_ONLY")
    assert lesson_folders()[0] == asset("lessons")
    assert [str(p) for p in lesson_folders()[1:]] == ["/one", "/two"]


def test_the_first_lesson_is_the_one_wanted_else_the_apps_first_else_the_courses() -> None:
    course = made(("x", ()), ("ddp-pattern", ()), ("y", ()))
    assert first_lesson(course, "y") == "y"
    assert first_lesson(course, "gone") == "ddp-pattern"
    assert first_lesson(course) == "ddp-pattern"
    assert first_lesson(made(("x", ()), ("y", ())), "gone") == "x"
    assert first_lesson(made(("x", ()), ("y", ())), "y") == "y"


def test_a_scenario_opens_on_the_lesson_about_it() -> None:
    from ddp_viz.model.course import load_lesson

    def scenario_of(lesson_id: str) -> dict:
        return load_lesson(lesson_id).scenario().to_dict()

    assert lesson_for(scenario_of("all-reduce")) == "all-reduce"
    assert lesson_for(scenario_of("uneven-inputs")) == "uneven-inputs"
    assert lesson_for(scenario_of("evaluation")) == "evaluation"
    assert lesson_for(scenario_of("ddp-pattern")) == "ddp-pattern"
    mlp = scenario_of("ddp-pattern") | {"model": {"kind": "mlp", "hidden": [4]}}
    assert lesson_for(mlp) == "every-parameter"
    assert lesson_for({}) == "ddp-pattern"


def course_copy(tmp_path, *ids: str):
    root = tmp_path / "lessons"
    root.mkdir()
    for i in ids:
        shutil.copytree(asset("lessons", i), root / i)
    return root


def set_key(folder, key: str, line: str) -> None:
    path = folder / "lesson.toml"
    lines = path.read_text().splitlines()
    at = next(n for n, text in enumerate(lines) if text.startswith(f"{key} = "))
    lines[at] = line
    path.write_text("\n".join(lines) + "\n")


def test_a_course_folder_is_sorted_by_order_then_id_and_keeps_only_known_done(tmp_path) -> None:
    root = course_copy(tmp_path, "ddp-pattern", "every-parameter", "buckets")
    set_key(root / "buckets", "order", "order = 10")  # the same order as ddp-pattern
    set_key(root / "every-parameter", "order", "order = 5")
    (root / "notes").mkdir()  # a folder without a lesson.toml is not a lesson
    (root / "README.md").write_text("x")
    course = load_course(root, done=["buckets", "gone"])
    assert course.ids == ["every-parameter", "buckets", "ddp-pattern"]
    assert course.done == {"buckets"}
    assert course.why_this_order == ""  # no course.toml here
    (root / "course.toml").write_text('why_this_order = "because"\n')
    assert load_course(root).why_this_order == "because"


def test_a_course_without_lessons_or_with_an_unknown_prerequisite_is_named(tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LessonError) as caught:
        load_course(empty)
    assert str(caught.value) == f"no lessons found in {empty}"
    root = course_copy(tmp_path, "ddp-pattern")
    set_key(root / "ddp-pattern", "prerequisites", 'prerequisites = ["nope", "ddp-pattern"]')
    with pytest.raises(LessonError) as caught:
        load_course(root)
    assert str(caught.value) == "lesson ddp-pattern: unknown prerequisites ['nope']"
