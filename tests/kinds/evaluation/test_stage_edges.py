"""The evaluation stage at the edges of what a run can report (pure: the 4-rank recording with
one thing moved, no Qt): no row held twice, two rows, a share longer than rank 0's, and a
model that answered no row right (an accuracy of 0 is still a reference to compare with)."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
FOUR = "evaluation-4-ranks.jsonl"


def frame(events, phase: int) -> StageFrame:
    lesson = lesson_of("evaluation")
    ctx = SceneContext(1800, 1000, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)


def said(f: StageFrame) -> str:
    return " ".join(f.all_text().split())


def cut_last_place(e):
    return dataclasses.replace(
        e, indices=e.indices[:-1], padding=e.padding[:-1], correct=e.correct[:-1]
    )


def test_no_row_held_twice_is_said_plainly() -> None:
    events = []
    for e in load_recording(FOUR):  # 24 rows on 4 ranks: 6 each, no padding
        if e.kind == "eval_share":
            e = cut_last_place(e)
        if e.kind == "run_started":
            table = {**e.scenario["evaluation"], "eval_rows": 24}
            e = dataclasses.replace(e, scenario={**e.scenario, "evaluation": table})
        events.append(e)
    text = said(frame(events, 1))
    assert "all-reduced sums, padded shares: no row counted twice: 24 answers for 24 rows" in (
        text
    ), text
    assert "row no row" not in text


def test_two_rows_held_twice_are_rows() -> None:
    events = [
        cut_last_place(e) if e.kind == "eval_share" and e.rank == 3 else e
        for e in load_recording(FOUR)
    ]
    assert "rows 0, 1 counted twice: 27 answers for 25 rows" in said(frame(events, 1))


def test_rank_0s_share_is_its_own_whatever_the_others_hold() -> None:
    events = [
        dataclasses.replace(
            e, indices=[*e.indices, 24], padding=[*e.padding, True], correct=[*e.correct, True]
        )
        if e.kind == "eval_share" and e.rank == 1
        else e
        for e in load_recording(FOUR)
    ]
    assert "rank 0 on its share: 7 of 29 places: a sample of the rows" in said(frame(events, 1))


def test_a_model_that_answered_no_row_right_still_has_a_reference() -> None:
    events = []
    for e in load_recording(FOUR):
        if e.kind == "eval_reference":
            e = dataclasses.replace(e, correct=[False] * len(e.correct))
        if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("module", 0):
            e = dataclasses.replace(e, accuracy=0.0)
        events.append(e)
    ref = frame(events, 1).text_with_key("acc.reference")
    assert ref is not None and (ref.value, ref.text) == (0.0, "0.0000")
    line = frame(events, 2).text_with_key("module.accuracy")
    assert line is not None and line.color == THEME.ok
    assert "accuracy 0.0000 on every row = one process" in line.text


def test_a_module_accuracy_a_hair_off_the_reference_is_a_cross() -> None:
    """Accuracies are ratios of whole numbers: equal ones divide the same two, so even 1e-9
    apart is another number."""
    events = load_recording(FOUR)
    ref = next(e for e in events if e.kind == "eval_reference")
    off = sum(ref.correct) / ref.rows + 1e-9
    events = [
        dataclasses.replace(e, accuracy=off)
        if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("module", 0)
        else e
        for e in events
    ]
    line = frame(events, 2).text_with_key("module.accuracy")
    assert line is not None and line.color == THEME.bad and line.text.endswith("≠ one process")
