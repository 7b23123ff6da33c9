"""Lessons as folders, the course, and the quiz data in them (pure: no Qt, no torch)."""

from __future__ import annotations

import re
import shutil

import pytest

from ddp_viz.model.assets import asset
from ddp_viz.model.course import load_course
from ddp_viz.model.lesson import LessonError, load_lesson_folder
from ddp_viz.model.quiz import Score, grade_prediction, parse_questions, prediction_is_right
from ddp_viz.model.rules import problems

# launching and the pattern first, correctness before speed: the all-reduce and buckets last
SHIPPED = [
    "ddp-pattern",
    "every-parameter",
    "who-splits-the-data",
    "accumulate-with-no-sync",
    "uneven-inputs",
    "not-averaged",
    "evaluation",
    "all-reduce",
    "buckets",
    "comm-hooks",
    "sharded",
]


def test_the_course_lists_every_lesson_folder_in_order() -> None:
    """Every folder holding a lesson.toml is a lesson, and the shipped lessons keep their order;
    a lesson added later takes its place by its own ``order`` (its folder is all it adds)."""
    course = load_course()
    folders = [p.name for p in asset("lessons").iterdir() if (p / "lesson.toml").is_file()]
    assert sorted(course.ids) == sorted(folders)
    assert [i for i in course.ids if i in SHIPPED] == SHIPPED
    assert [lesson.order for lesson in course] == sorted(lesson.order for lesson in course)
    assert course.next("ddp-pattern").id == "every-parameter"
    assert course.previous("ddp-pattern") is None
    assert "before speed" in course.why_this_order  # the course view says why
    assert course.missing_prerequisites("every-parameter") == ["ddp-pattern"]
    course.mark_done("ddp-pattern")
    assert course.missing_prerequisites("every-parameter") == []


@pytest.mark.parametrize("lesson", load_course().lessons, ids=lambda lesson: lesson.id)
def test_every_lesson_meets_every_rule(lesson) -> None:
    """The rules `ddp-viz check` runs (model.rules; tests/core/test_lesson_rules.py shows
    each one failing), on every lesson of the course."""
    course = load_course().lessons
    assert [p.text() for p in problems(lesson, course)] == []
    assert lesson.scenario().world_size >= 1


def test_a_lesson_is_added_by_adding_a_folder(tmp_path) -> None:
    shutil.copytree(asset("lessons"), tmp_path / "lessons")
    new = tmp_path / "lessons" / "my-lesson"
    shutil.copytree(tmp_path / "lessons" / "ddp-pattern", new)
    toml = (new / "lesson.toml").read_text()
    (new / "lesson.toml").write_text(
        toml.replace('title = "Launching and the DDP pattern"', 'title = "Mine"').replace(
            "order = 10", "order = 5"
        )
    )
    course = load_course(tmp_path / "lessons")
    assert course.ids[0] == "my-lesson" and course.get("my-lesson").title == "Mine"


def test_a_lesson_edited_on_disk_is_read_again_and_an_unchanged_one_is_not(tmp_path) -> None:
    """Lessons are kept once read (a window reads the course when it opens); a lecturer's
    edit, even one that keeps the file's size, shows the next time the lesson is read."""
    folder = tmp_path / "mine"
    shutil.copytree(asset("lessons", "ddp-pattern"), folder)
    first = load_lesson_folder(folder)
    assert load_lesson_folder(folder) is first  # nothing changed: not parsed again
    toml = (folder / "lesson.toml").read_text()
    old = 'title = "Launching and the DDP pattern"'
    (folder / "lesson.toml").write_text(toml.replace(old, old.replace("DDP", "PDD")))
    assert load_lesson_folder(folder).title == "Launching and the PDD pattern"
    (folder / "lesson.md").write_text("# Rewritten\n")
    assert load_lesson_folder(folder).markdown == "# Rewritten\n"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (('scene = "ddp_step"', 'scene = "hologram"'), "unknown scene 'hologram'"),
        (
            ("\nshards = [", "\nshuffle = ["),
            "unknown phases ['shuffle']; the ddp_step scene's phases: shards, local, allreduce,"
            " step",
        ),
        (("terms = [", "terms = [1, "), "`terms` must be a list of words"),
        (('scenario = "scenario.toml"', 'scenario = "gone.toml"'), "scenario file gone.toml"),
        (('\nkind = "predict"', '\nkind = "essay"'), "unknown kind 'essay'"),
        (('what = "averaged"', 'what = "vibes"'), "quantity.what must be one of"),
    ],
)
def test_a_broken_lesson_folder_says_what_is_wrong(tmp_path, change, words) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(asset("lessons", "ddp-pattern"), folder)
    toml = (folder / "lesson.toml").read_text()
    assert change[0] in toml
    (folder / "lesson.toml").write_text(toml.replace(change[0], change[1], 1))
    with pytest.raises(
        LessonError,
        match="lesson broken: .*"
        + words.replace("[", r"\[").replace("]", r"\]").replace("(", r"\("),
    ):
        load_lesson_folder(folder)


def test_a_listing_shows_the_code_of_the_run_s_own_settings() -> None:
    lesson = load_course().get("accumulate-with-no-sync")
    base = lesson.scenario().to_dict()

    def shown(**train):
        sc = {**base, "train": {**base["train"], **train}}
        return lesson.code_with(sc).splitlines(), sc

    def where(lines, start):
        return next(i for i, line in enumerate(lines) if line.strip().startswith(start))

    lines, _ = shown(no_sync="forward_and_backward")
    inside = where(lines, "with ddp.no_sync() if quiet")
    assert inside < where(lines, "loss = loss_fn")  # the forward inside
    lines, sc = shown(no_sync="backward_only")
    quiet = where(lines, "if quiet and")
    assert quiet < where(lines, "loss = loss_fn") < where(lines, "with ddp.no_sync():")
    assert where(lines, "with ddp.no_sync():") < where(lines, "(loss * scale).backward()")
    marked = [lines[n - 1].strip() for n in lesson.lines_for("step", sc)]
    assert marked == ["optimizer.zero_grad()", "optimizer.step()"]
    backward = [lines[n - 1].split("#")[0].strip() for n in lesson.lines_for("allreduce", sc)]
    assert backward == ["(loss * scale).backward()"] * 2  # the quiet one syncs too
    lines, _ = shown(no_sync="none", scale_loss=False)
    assert not any("if quiet and" in line for line in lines)
    assert "    # scale = 1; last = k - 1" in lines  # not "1 / k"


@pytest.mark.parametrize(
    ("lesson_id", "changes", "epochs"),
    [
        ("who-splits-the-data", {}, 3),  # [data] epochs = 3 sets the length
        ("who-splits-the-data", {"steps": 32}, 32),  # one step an epoch
        ("who-splits-the-data", {"steps": 4, "world_size": 2}, 2),  # 2 steps an epoch
        ("accumulate-with-no-sync", {"steps": 7}, 7),  # 3 micro-batches a step, 3 an epoch
    ],
)
def test_a_listing_loops_over_the_epochs_its_run_reaches(lesson_id, changes, epochs) -> None:
    """A length set by steps ([data] epochs = 0) still shows the epochs the run reaches:
    never 0."""
    lesson = load_course().get(lesson_id)
    sc = lesson.scenario().with_changes(**changes)
    lines = [line.strip() for line in lesson.code_with(sc.to_dict()).splitlines()]
    assert f"while True:  # {epochs} epochs in this run" in lines


def test_a_choice_in_the_listing_needs_its_texts(tmp_path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(asset("lessons", "accumulate-with-no-sync"), folder)
    toml = (folder / "lesson.toml").read_text()
    (folder / "lesson.toml").write_text(toml.replace('[code.choose."train.no_sync"]', "[other]"))
    with pytest.raises(LessonError, match=re.escape('no [code.choose."train.no_sync"]')):
        load_lesson_folder(folder)


def test_prediction_grading_is_two_sided() -> None:
    (q,) = parse_questions(
        [{"id": "p", "kind": "predict", "prompt": "?", "quantity": {"param": "weight"}}]
    )
    assert prediction_is_right(q, -27.5, -27.5) and prediction_is_right(q, -27.6, -27.5)
    assert not prediction_is_right(q, -40, -27.5) and not prediction_is_right(q, -20, -27.5)
    assert "the ranks computed -27.5" in grade_prediction(q, -27.5, -27.5).text


def test_only_first_answers_score_and_passing_needs_every_question_right() -> None:
    score = Score()
    score.record("a", False)
    score.record("a", True)
    score.record("b", True)
    assert score.correct == 1 and score.answered == 2
    assert score.passed(2) and not score.passed(3)


@pytest.mark.parametrize("scene", ["bucket_timeline", "data_split", "accumulation"])
def test_the_toolbar_names_each_phase_as_the_stage_titles_it(scene) -> None:
    """The toolbar said 'shards' while the buckets stage said '1 · this step's buckets'."""
    import importlib

    from ddp_viz.model.scenes import phase_words, scenes
    from ddp_viz.model.timeline import PHASES

    # the scene's module, wherever it lives (the core's scenes, or a kind's folder)
    titles = importlib.import_module(scenes()[scene].__module__).TITLES
    for phase, word in zip(PHASES, phase_words(scene), strict=True):
        assert word in titles[phase], (phase, word, titles[phase])


@pytest.mark.parametrize(
    ("changes", "lesson_id"),
    [
        ({}, "buckets"),
        ({"ddp": {"bucket_cap_mb": 25.0}}, "buckets"),  # the experiment its quiz suggests
    ],
)
def test_a_buckets_run_opens_on_the_buckets_lesson(changes, lesson_id) -> None:
    from ddp_viz.model.course import lesson_for

    sc = load_course().get("buckets").scenario().with_changes(**changes).to_dict()
    assert lesson_for(sc) == lesson_id
    assert lesson_for(load_course().get("every-parameter").scenario().to_dict()) == (
        "every-parameter"
    )
