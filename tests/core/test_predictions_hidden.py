"""No lesson's stage shows the number a prediction asks for before the session grades it: at
every phase of every step, at the start, middle and end of each, the lesson's own scene is
built from a real recording and searched for the value (as a keyed number, or written in
its words), wherever the grading rule (:func:`ddp_viz.model.cursor.shown`) says it is not on
screen yet; and at the cursor that grades it, it is there. Expected values are read from the
raw events (pure: no Qt, no torch)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.cursor import reached
from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import record, walk
from tests.conftest import load_recording
from tests.core.test_predictions_by_cursor import CASES, _matching, _raw_value, _shows

SIZES = [(1280, 720), (1920, 1000)]


def _own_value(lesson: str, qid: str | None, events) -> float:
    """The lessons test_predictions_by_cursor does not cover, from the raw events."""
    if lesson == "sharded":  # Adam state bytes ZeRO-1's rank 1 held after step 1
        (e,) = [
            e
            for e in events
            if e.kind == "sharded_step" and e.way == "zero" and e.step == 0 and e.rank == 1
        ]
        return float(e.state)
    if qid == "predict-missing-rank":  # the rank monitored_barrier's error named
        errors = " ".join(getattr(e, "error", "") for e in events if e.kind == "stalled")
        (named,) = re.findall(r"Rank (\d+) failed to pass monitoredBarrier", errors)
        return float(named)
    return _raw_value(lesson, events)


def _written(frame: StageFrame, lesson: str, qid: str | None, value: float) -> bool:
    text = " ".join(frame.all_text().split())
    if lesson == "not-averaged":  # a count of steps: in words (1.0 is many a keyed number)
        return f"step {int(value) + 1} never started" in text
    if lesson == "sharded":
        return f"{int(value):,}" in text or any(
            t.key.startswith("held.zero.state") and t.value == value for t in frame.texts
        )
    if qid == "predict-missing-rank":
        return f"named rank {int(value)}" in text or f"Rank {int(value)} failed" in text
    return _shows(frame, value)


OWN = [
    ("sharded", "predict-zero-state", "sharded-4-ranks.jsonl"),
    ("uneven-inputs", "predict-missing-rank", "uneven-monitored-barrier.jsonl"),
]
ALL = [(lesson, None, name) for lesson, name, _ in CASES] + OWN


@pytest.mark.parametrize(("lesson", "qid", "name"), ALL)
@pytest.mark.parametrize("size", SIZES)
def test_no_prediction_is_on_the_stage_before_it_is_graded(lesson, qid, name, size) -> None:
    info = load_lesson(lesson)
    predicts = [q for q in info.questions if q.kind == "predict" and qid in (None, q.id)]
    question = predicts[-1] if qid is None else predicts[0]
    q = dataclasses.replace(question.quantity, world_size=None)
    if lesson == "who-splits-the-data":
        q = dataclasses.replace(q, rank=2)  # asked of rank 3 of 4; recorded with 3 ranks
    events = _matching(load_recording(name), q.settings())
    value = _own_value(lesson, qid, events)
    rec = record(events)
    assert q.read(rec) == pytest.approx(value)
    ctx = SceneContext(*size, load_theme("light"), info.phase_text, estimate_width)
    seen = False
    for cursor in walk(rec.complete_prefix()):
        for progress in (0.0, 0.5, 1.0):
            frame = stage_frame(rec, cursor, progress, ctx, info.scene)
            on = _written(frame, lesson, qid, value)
            if not reached(cursor, q.reveal_step(rec), q.phase):
                assert not on, (cursor, progress, value)
            elif not seen and progress == 1.0:
                assert on, (cursor, progress, value)  # graded in this phase: shown in it
                seen = True
    assert seen
