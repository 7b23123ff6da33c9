"""Every lesson's prediction question graded exactly when its value is on the stage (the session
controller with a fake transport and view, recorded runs, no Qt, no torch): the stage is walked
phase by phase and the cursor of the one grading is compared with the cursor written here by
hand; the lesson's own scene must show the value at that cursor and not at the one before.
The value graded is counted from the raw events."""

from __future__ import annotations

import dataclasses
import re

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.session import EngineState, SessionController
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record, walk
from tests.conftest import load_recording
from tests.core.test_session import FakeTransport, FakeView


def _raw_value(lesson: str, events: list[protocol.Event]) -> float:
    """The number each lesson's question asks about, read from the events themselves."""
    if lesson == "all-reduce":  # bytes rank 2 sent in the ring
        (e,) = [
            e for e in events if e.kind == "collective_result" and e.algo == "ring" and e.rank == 2
        ]
        return float(e.bytes_sent)
    if lesson == "accumulate-with-no-sync":  # the comm hook's calls on rank 0 in step 1
        micro = [e for e in events if e.kind == "micro_step" and e.step == 0 and e.rank == 0]
        return float(sum(len(m.allreduced) for m in micro))
    if lesson == "buckets":  # buckets rank 0 all-reduced in step 2
        (t,) = [e for e in events if e.kind == "timing" and e.step == 1 and e.rank == 0]
        return float(len(t.buckets))
    if lesson == "uneven-inputs":  # rank 1's averaged weight gradient in step 4
        (a,) = [e for e in events if e.kind == "averaged_grad" and e.step == 3 and e.rank == 1]
        return a.grads["weight"][0]
    if lesson == "ddp-pattern":  # rank 0's averaged weight gradient in step 1
        (a,) = [e for e in events if e.kind == "averaged_grad" and e.step == 0 and e.rank == 0]
        return a.grads["weight"][0]
    if lesson == "not-averaged":  # steps every rank got through optimizer.step() before DDP raised
        (started,) = [e for e in events if e.kind == "run_started"]
        params = {(e.step, e.rank) for e in events if e.kind == "params"}
        steps = {s for s, _ in params}
        return float(sum(all((s, r) in params for r in range(started.world_size)) for s in steps))
    if lesson == "who-splits-the-data":  # rows rank 2 trained on in step 1
        (g,) = [e for e in events if e.kind == "local_grad" and e.step == 0 and e.rank == 2]
        return float(len(g.rows))
    raise AssertionError(lesson)


def _matching(events: list[protocol.Event], settings) -> list[protocol.Event]:
    """The recording with its scenario set to what the question asks for (a derived record)."""
    out = []
    for e in events:
        if e.kind == "run_started":
            scenario = dict(e.scenario)
            for key, value in settings:
                *path, last = key.split(".")
                table = scenario
                for part in path:
                    table[part] = dict(table.get(part, {}))
                    table = table[part]
                table[last] = value
            e = dataclasses.replace(e, scenario=scenario)
        out.append(e)
    return out


# lesson, recording, the cursor (step from 0, phase) where its value first appears on the stage
ASKED = {"uneven-inputs": "predict-join-average"}
CASES = [
    ("all-reduce", "ring-4-ranks.jsonl", Cursor(5, 3)),  # the closing charts of the last step
    ("accumulate-with-no-sync", "accumulate-backward-only.jsonl", Cursor(0, 2)),
    ("buckets", "buckets-lesson-2-ranks.jsonl", Cursor(1, 0)),  # the layout, step 2's first phase
    ("uneven-inputs", "uneven-join.jsonl", Cursor(3, 2)),
    ("ddp-pattern", "uneven-3-ranks.jsonl", Cursor(0, 2)),
    ("not-averaged", "not-averaged-unused.jsonl", Cursor(0, 3)),  # the run's end: DDP raised
    ("who-splits-the-data", "who-splits-3-ranks.jsonl", Cursor(0, 1)),  # each rank's rows line
]


def _shows(frame, value: float) -> bool:
    """A number of the frame is ``value``, or its text writes it (a bucket count in words)."""
    if any(abs(v - value) <= 1e-9 * max(1.0, abs(value)) for v in frame.numbers().values()):
        return True
    text = " ".join(frame.all_text().split())
    if f"step {int(value) + 1} never started" in text:  # the steps done before DDP raised
        return True
    rows = re.search(r"rank 2 · rows ([\d, ]+) ·", text)  # the rows rank 2 trained on
    if rows and len(rows.group(1).split(",")) == value:
        return True
    if value == int(value):
        return f"in {int(value)} buckets" in text
    return fmt(value) in text


@pytest.mark.parametrize(("lesson", "name", "when"), CASES)
@pytest.mark.parametrize("right", [True, False])
def test_each_prediction_is_graded_when_its_value_reaches_the_stage(
    lesson, name, when, right
) -> None:
    info = load_lesson(lesson)
    wanted = ASKED.get(lesson)  # a lesson with several predictions: the one its case records
    question = next(
        q for q in info.questions if q.kind == "predict" and (wanted is None or q.id == wanted)
    )
    if lesson == "who-splits-the-data":  # asked of rank 3 of 4; recorded with 3 ranks
        q = dataclasses.replace(question.quantity, world_size=None, rank=2)
        question = dataclasses.replace(question, quantity=q)
    events = _matching(load_recording(name), question.quantity.settings())
    actual = _raw_value(lesson, events)
    view = FakeView()
    s = SessionController(FakeTransport(), view)
    s.start_engine()
    s.on_transport_state(EngineState.READY)
    s.set_questions([question if q.id == question.id else q for q in info.questions])
    guess = actual if right else actual + 1 + abs(actual) * 10 * question.tolerance
    assert "Locked in" in s.lock_prediction(question, guess)
    s.request_run(default_scenario())
    for e in events:
        s.on_transport_event(e)
    assert view.called("show_prediction_graded") == []  # the run ended; the stage showed nothing
    graded = []
    cursors = list(walk(s.record.complete_prefix()))
    for cursor in cursors:
        for progress in (0.0, 0.5, 1.0):
            before = len(view.called("show_prediction_graded"))
            s.on_stage_position(cursor, progress)
            if len(view.called("show_prediction_graded")) > before:
                graded.append((cursor, progress))
    assert graded == [(when, 0.0)]  # as the phase that shows it begins, not a phase later
    ((q, feedback, scored),) = view.called("show_prediction_graded")
    assert q is question and scored and feedback.correct is right
    assert question.quantity.read(s.record) == pytest.approx(actual, rel=1e-12)
    # the lesson's own stage shows the value at that cursor, and not one phase before
    ctx = SceneContext(1280, 720, load_theme("light"), info.phase_text, estimate_width)
    rec = record(events)
    at = stage_frame(rec, when, 1.0, ctx, info.scene)
    assert _shows(at, actual), (when, actual)
    i = cursors.index(when)
    if i > 0 and lesson != "ddp-pattern":  # (-33.17 is not a number any scene shows earlier)
        earlier = stage_frame(rec, cursors[i - 1], 1.0, ctx, info.scene)
        assert not _shows(earlier, actual), (cursors[i - 1], actual)
