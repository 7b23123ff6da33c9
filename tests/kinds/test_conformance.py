"""What every registered kind of run must do, checked the same way for each (a kind that is
added passes these or its folder is not done): its recordings decode and fold, a lesson of
its own shows them, every frame of every phase stays on the stage on a laptop and on a
projector, its report and status line run, and its form round-trips its lesson's scenario.

A kind's recordings are found among tests/data/*.jsonl by the kinds the record says it is.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from ddp_viz.model import registry
from ddp_viz.model.assets import asset
from ddp_viz.model.course import lesson_for, load_course
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.report import run_report
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.session import status_text
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import RunRecord, record, walk
from tests.conftest import DATA, load_recording
from tests.frames import assert_inside_and_apart

# the stage's size in the window with the lesson column shown (projector mode may hide it,
# which only widens the stage): a laptop at 1280×800, and a projector at 1920×1080 and at
# 1280×800, the smallest classroom one
STAGES = {
    "laptop 1280×800": ("light", 889, 495),
    "projector 1920×1080": ("projector", 1341, 696),
    "projector 1280×800": ("projector", 889, 495),
}


# recordings cut mid-run on purpose (tests/data/README.md): a watched run's hang, saved while
# its ranks were stuck
CUT = {"watched-hang.jsonl"}


def kind_ids() -> list[str]:
    return [k.id for k in registry.kinds()]


@cache
def recordings() -> dict[str, list[str]]:
    """Each kind's recordings: those whose scenario is about it (its table, or its claim) and
    that its lesson shows."""
    out: dict[str, list[str]] = {k: [] for k in kind_ids()}
    for path in sorted(DATA.glob("*.jsonl")):
        events = load_recording(path.name)
        started = next((e for e in events if e.kind == "run_started"), None)
        if started is None:
            continue
        scenario = started.scenario
        for kind in registry.kinds():
            # a run of several kinds (accumulation on a sampler) is its lesson's kind's
            if kind.owns(scenario) and lesson_for(scenario) == _lesson_id(kind.id):
                out[kind.id].append(path.name)
    return out


def _lesson_id(kind_id: str) -> str | None:
    """Its first lesson of the course; a kind with a page of its own: the kind's id, which
    its recordings' header names."""
    if registry.page_of(kind_id) is not None:
        return kind_id
    return next((lesson.id for lesson in load_course() if lesson.kind == kind_id), None)


def lesson_of(kind_id: str):  # -> Lesson
    """The lesson that shows the kind's runs (its page, for a kind with one)."""
    page = registry.page_of(kind_id)
    if page is not None:
        return load_lesson_folder(asset(page))
    return next(lesson for lesson in load_course() if lesson.kind == kind_id)


@pytest.mark.parametrize("kind_id", kind_ids())
def test_every_kind_has_a_lesson_and_a_recording(kind_id: str) -> None:
    scenes = registry.get(kind_id).scenes
    assert not scenes or lesson_of(kind_id).scene in scenes, "its lesson shows its own scene"
    assert recordings()[kind_id], f"no recording in tests/data is a run of {kind_id}"


def _records(kind_id: str) -> list[tuple[str, RunRecord]]:
    return [(name, record(load_recording(name))) for name in recordings()[kind_id]]


@pytest.mark.parametrize("kind_id", kind_ids())
def test_a_kinds_recordings_fold_and_open_on_its_lesson(kind_id: str) -> None:
    kind = registry.get(kind_id)
    for name, rec in _records(kind_id):
        assert rec.bad_lines == 0 and (rec.done or name in CUT), name
        assert kind in rec.kinds(), name
        if kind.part is not None or kind.record_part is not None:
            assert kind_id in rec.parts, name
        assert lesson_for(rec.scenario) == _lesson_id(kind_id), name
        report = run_report(rec)
        assert report.strip() and "Traceback" not in report, name
        assert status_text(rec).startswith(f"Run {rec.run} "), name


@pytest.mark.parametrize("stage", list(STAGES))
@pytest.mark.parametrize("kind_id", kind_ids())
def test_every_frame_of_a_kinds_runs_stays_on_the_stage(kind_id: str, stage: str) -> None:
    """Every phase of every step, at its start, half-way and at its end: no text leaves the
    stage or lies over another."""
    theme, width, height = STAGES[stage]
    lesson = lesson_of(kind_id)
    ctx = SceneContext(width, height, load_theme(theme), lesson.phase_text, estimate_width)
    for name, rec in _records(kind_id)[:2]:
        for cursor in walk(max(1, rec.complete_prefix())):
            for progress in (0.0, 0.5, 1.0):
                frame = stage_frame(rec, cursor, progress, ctx, lesson.scene)
                assert frame.texts, (name, cursor)
                try:
                    assert_inside_and_apart(frame)
                except AssertionError as exc:
                    raise AssertionError(f"{name} at {cursor} ({progress}): {exc}") from None


@pytest.mark.parametrize("kind_id", kind_ids())
def test_a_kinds_form_round_trips_its_lessons_scenario(kind_id: str, qtbot) -> None:
    from ddp_viz._qt.scenario_form import ScenarioForm

    scenario = lesson_of(kind_id).scenario()
    form = ScenarioForm(scenario, load_theme("light"))
    qtbot.addWidget(form)
    assert form.valid, form.errors
    assert form.scenario() == scenario
    fields = form.kind_fields.get(kind_id)
    if fields is not None:  # its fields show for its own lesson
        assert fields.applies(scenario)
        assert all(form._form.isRowVisible(row) for row in fields.rows)


def test_a_kind_without_a_lesson_or_a_recording_fails_the_suite() -> None:
    """The suite's own check can fail: a kind registered with neither."""
    registry.register(registry.RunKind(id="toy_without_runs", table="toy_without_runs"))
    recordings.cache_clear()
    try:
        with pytest.raises((AssertionError, StopIteration)):
            test_every_kind_has_a_lesson_and_a_recording("toy_without_runs")
    finally:
        registry.unregister("toy_without_runs")
        recordings.cache_clear()


def test_the_kinds_are_the_folders() -> None:
    """A kind's id is its folder's name (the registry finds the folder by it)."""
    assert sorted(kind_ids()) == sorted(registry.kind_folders())
    for kind_id in kind_ids():
        assert (Path(registry.__file__).parents[1] / "kinds" / kind_id).is_dir()
