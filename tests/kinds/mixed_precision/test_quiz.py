"""The lesson's predictions graded from recorded runs (pure): the first step the scaler's arm
skipped, known only once the run is over, and the bytes a rank handed to all-reduce in one
step, read at that step and rank (mid-run as well as at the end)."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.course import load_course
from ddp_viz.model.quiz import Quantity
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import load_recording

NAME = "mixed-precision-3-ranks.jsonl"


def question(qid: str):
    lesson = load_course().get("mixed-precision")
    return next(q for q in lesson.questions if q.id == qid)


def test_the_skipped_step_is_graded_from_the_run_and_only_once_it_is_over() -> None:
    q = question("predict-skipped-step")
    events = load_recording(NAME)
    full = record(events)
    assert q.quantity.matches(full)
    assert q.quantity.read(full) == 5.0  # the lesson's spike_step, from 1
    # mid-run, past the skipped step: not graded yet (a later step could not change it, but
    # the quantity says it is known at the end)
    cut = [e for e in events if not (e.kind == "precision_step" and e.step >= 6)]
    cut = [e for e in cut if e.kind not in ("run_finished",)]
    partial = RunRecord()
    for e in cut:
        partial.apply(e)
    assert q.quantity.read(partial) is None
    # the last rank alone stepping at step 5 does not move the first skip: ranks 0 and 1 did
    moved = [
        dataclasses.replace(e, stepped=True)
        if e.kind == "precision_step" and (e.arm, e.step, e.rank) == ("fp16", 4, 2)
        else e
        for e in events
    ]
    assert q.quantity.read(record(moved)) == 5.0
    # every rank stepping at step 5: no step skipped, graded as 0
    none = [
        dataclasses.replace(e, stepped=True)
        if e.kind == "precision_step" and e.arm == "fp16"
        else e
        for e in events
    ]
    assert q.quantity.read(record(none)) == 0.0


def test_the_bytes_are_read_at_their_step_and_rank() -> None:
    q = question("predict-bf16-bytes")
    events = load_recording(NAME)
    # move each step's and rank's figure apart, so a read at the wrong one differs
    moved = [
        dataclasses.replace(e, sent=e.sent + 10 * e.step + e.rank)
        if e.kind == "precision_step" and e.arm == "wire_bf16"
        else e
        for e in events
    ]
    rec = record(moved)
    assert q.quantity.read(rec) == 866.0  # step 1, rank 0: 433 values × 2 bytes
    for step in (1, 4, 8):
        for rank in (0, 2):
            other = dataclasses.replace(q.quantity, step=step, rank=rank)
            assert isinstance(other, Quantity)
            assert other.read(rec) == 866 + 10 * (step - 1) + rank
