"""Run-wide verdicts on both sides (pure: recorded events, no Qt, no torch): "ranks agree" over
every step and not just one, within 1e-6 and not 1e-3; Join's final parameters the same on
every rank; a watched run's averages identical only by value or digest, never by a norm; a
prediction graded against the real value's tolerance, not the guess's."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.assets import asset
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.quiz import Question, grade_prediction
from ddp_viz.model.report import run_report
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.session import status_text
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording


def nudged(events, kind: str, step: int | None, rank: int, rel: float, field: str):
    """A copy where ``rank``'s ``field`` of the ``kind`` event at ``step`` (any step when
    None) has its first value moved by ``rel`` relative (absolute below 1, as the checks
    measure it)."""
    out, done = [], False
    for e in events:
        if not done and e.kind == kind and e.rank == rank and getattr(e, "step", None) == step:
            table = dict(getattr(e, field))
            name = next(iter(table))
            values = list(table[name])
            values[0] += rel * max(1.0, abs(values[0]))
            table[name] = values
            e, done = dataclasses.replace(e, **{field: table}), True
        out.append(e)
    assert done
    return out


def ctx(lesson: str) -> SceneContext:
    info = load_lesson(lesson)
    return SceneContext(1280, 720, load_theme("light"), info.phase_text, estimate_width)


@pytest.mark.parametrize(("rel", "ok"), [(0.0, True), (5e-8, True), (2e-5, False), (4e-4, False)])
@pytest.mark.parametrize("step", [0, 1])
def test_ranks_agree_on_every_step_within_1e_6(rel, ok, step) -> None:
    events = load_recording("four-ranks-3-steps.jsonl")
    rec = record(nudged(events, "params", step, 2, rel, "params"))
    mark = "✓ ranks agree" if ok else "✗ ranks differ"
    assert mark in status_text(rec), status_text(rec)
    assert rec.check_summary()["ranks_agree"] is ok
    assert rec.steps[step].ranks_agree() is ok
    f = stage_frame(rec, Cursor(step, 3), 1.0, ctx("ddp-pattern"))
    text = " ".join(f.all_text().split())
    assert ("✓ all ranks equal" in text) is ok and ("✗ ranks differ" in text) is not ok
    # one phase earlier the check is not made yet, on either side
    f = stage_frame(rec, Cursor(step, 2), 1.0, ctx("ddp-pattern"))
    text = " ".join(f.all_text().split())
    assert "✓ all ranks equal" not in text and "✗ ranks differ" not in text
    report = run_report(rec)
    assert ("✗" in report) is not ok


@pytest.mark.parametrize(("rel", "ok"), [(0.0, True), (3e-5, False)])
def test_join_says_the_same_on_every_rank_only_when_every_rank_is(rel, ok) -> None:
    events = load_recording("uneven-join.jsonl")
    rec = record(nudged(events, "final_params", None, 1, rel, "params"))
    f = stage_frame(rec, Cursor(rec.complete_prefix() - 1, 3), 1.0, ctx("uneven-inputs"), "uneven")
    final = f.text_with_key("final").text
    assert ("✓ the same on every rank" in final) is ok, final
    assert ("✗ the ranks differ" in final) is not ok, final


def test_a_watched_average_is_identical_by_digest_not_by_norm() -> None:
    events = load_recording("watched-2-ranks.jsonl")
    lesson = load_lesson_folder(asset("watched"))
    wctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)

    def page(evs):  # type: ignore[no-untyped-def]
        f = stage_frame(record(evs), Cursor(0, 3), 1.0, wctx, lesson.scene)
        return f.text_with_key("averages.identical").text

    assert page(events).startswith("✓")

    def without_digest(e):  # type: ignore[no-untyped-def]
        if e.kind != "averaged_grad" or e.step != 0:
            return e
        grads = {
            n: {k: v for k, v in g.items() if k != "digest"} if isinstance(g, dict) else g
            for n, g in e.grads.items()
        }
        return dataclasses.replace(e, grads=grads)

    # same shapes and norms on both ranks, but nothing that says bit for bit
    assert not page([without_digest(e) for e in events]).startswith("✓")

    def other_digest(e):  # type: ignore[no-untyped-def]
        if e.kind != "averaged_grad" or e.step != 0 or e.rank != 1:
            return e
        name = next(n for n, g in e.grads.items() if isinstance(g, dict))
        g = e.grads[name]
        return dataclasses.replace(e, grads={**e.grads, name: {**g, "digest": "0" * 8}})

    assert page([other_digest(e) for e in events]).startswith("✗")


@pytest.mark.parametrize(
    ("guess", "right"),
    [(100.0, True), (100.99, True), (99.01, True), (101.005, False), (98.995, False)],
)
def test_a_prediction_is_right_within_the_tolerance_of_the_real_value(guess, right) -> None:
    q = Question("q", "predict", "?", "because", tolerance=0.01)
    assert grade_prediction(q, guess, 100.0).correct is right


@pytest.mark.parametrize(
    ("lesson", "name"),
    [
        ("who-splits-the-data", "who-splits-3-ranks.jsonl"),
        ("accumulate-with-no-sync", "accumulate-3-micro.jsonl"),
        ("accumulate-with-no-sync", "accumulate-4-ranks.jsonl"),
        ("ddp-pattern", "four-ranks-3-steps.jsonl"),
    ],
)
@pytest.mark.parametrize(("rel", "ok"), [(0.0, True), (2e-5, False)])
def test_every_scene_says_ranks_differ_when_one_rank_holds_other_parameters(
    lesson, name, rel, ok
) -> None:
    info = load_lesson(lesson)
    rec = record(nudged(load_recording(name), "params", 0, 1, rel, "params"))
    f = stage_frame(rec, Cursor(0, 3), 1.0, ctx(lesson), info.scene)
    text = " ".join(f.all_text().split())
    assert ("✓ all ranks equal" in text) is ok and ("✗ ranks differ" in text) is not ok, text


def nudged_reference(events, step: int, field: str, rel: float):
    """A copy whose reference at ``step`` has the first value of its ``field`` table (first
    tensor) moved by ``rel``: the float64 oracle moved between 1e-5 and a loose 1e-3."""
    out = []
    for e in events:
        if e.kind == "reference" and e.step == step:
            table = dict(getattr(e, field))
            name = next(iter(table))
            first = table[name][0]
            table[name] = [first + rel * max(1.0, abs(first)), *table[name][1:]]
            e = dataclasses.replace(e, **{field: table})
        out.append(e)
    return out


@pytest.mark.parametrize(("rel", "ok"), [(0.0, True), (1e-4, False)])
def test_the_average_is_the_full_batch_within_1e_5_and_not_a_loose_tolerance(rel, ok) -> None:
    events = nudged_reference(
        load_recording("four-ranks-3-steps.jsonl"), 0, "full_batch_grads", rel
    )
    rec = record(events)
    assert rec.steps[0].average_is_full_batch() is ok
    assert (", ✓ average = full batch" in status_text(rec)) is ok, status_text(rec)
    f = stage_frame(rec, Cursor(0, 3), 1.0, ctx("ddp-pattern"))
    text = " ".join(f.all_text().split())
    assert ("✓ average = full batch" in text) is ok and ("✗ average ≠ full batch" in text) is not ok
    report = run_report(rec)
    assert ("✗" in report) is not ok, report


@pytest.mark.parametrize(("rel", "ok"), [(0.0, True), (1e-4, False)])
def test_accumulation_equals_one_process_within_1e_5(rel, ok) -> None:
    events = load_recording("accumulate-3-micro.jsonl")
    steps = sorted(e.step for e in events if e.kind == "reference" and e.one_process_params)
    step = steps[-1]
    rec = record(nudged_reference(events, step, "one_process_params", rel))
    f = stage_frame(rec, Cursor(step, 3), 1.0, ctx("accumulate-with-no-sync"), "accumulation")
    text = " ".join(f.all_text().split())
    assert ("✓ the same" in text) is ok and ("✗ not the same" in text) is not ok, text


@pytest.mark.parametrize(("rel", "ok"), [(0.0, True), (2e-5, False)])
def test_the_not_averaged_lesson_says_when_the_averages_or_parameters_differ(rel, ok) -> None:
    events = load_recording("not-averaged.jsonl")
    grads = record(nudged(events, "averaged_grad", 0, 1, rel, "grads"))
    f = stage_frame(grads, Cursor(0, 2), 1.0, ctx("not-averaged"), "not_averaged")
    text = " ".join(f.all_text().split())
    assert ("✓ every rank holds the same average" in text) is ok, text
    assert ("✗ the averages differ" in text) is not ok, text
    params = record(nudged(events, "params", 0, 1, rel, "params"))
    f = stage_frame(params, Cursor(0, 3), 1.0, ctx("not-averaged"), "not_averaged")
    text = " ".join(f.all_text().split())
    assert ("✓ parameters identical on every rank" in text) is ok, text
    assert ("✗ the ranks' parameters now differ" in text) is not ok, text
