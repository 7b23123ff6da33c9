"""A locked guess is graded when the phase that shows its value begins, however the stage got
there: a scene may draw the value from the phase's first frame (the all-reduce's average is
on the stage half way through it), so grading at the phase's end left the answer on screen
ungraded (issue 47). Autoplay enters the next phase at progress 0.0, so it reports progress
1.0 only on the run's last phase; stepping by hand reports 1.0 on every phase. Both must grade
at the same place.
"""

from __future__ import annotations

from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.timeline import Cursor, walk
from tests.core.test_session import make, play, predict_question, ready


def autoplay(s) -> list[tuple[Cursor, float]]:
    """Move the stage as the player's timer does; return the positions where a guess was
    graded."""
    graded = []
    cursors = list(walk(s.record.complete_prefix()))
    for i, cursor in enumerate(cursors):
        positions = [0.0, 0.5] + ([1.0] if i == len(cursors) - 1 else [])
        for progress in positions:
            before = len(s.view.called("show_prediction_graded"))
            s.on_stage_position(cursor, progress)
            if len(s.view.called("show_prediction_graded")) > before:
                graded.append((cursor, progress))
    return graded


def test_autoplay_grades_a_guess_as_the_phase_that_reveals_it_begins() -> None:
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    s.lock_prediction(q, -33.17)
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, "uneven-3-ranks.jsonl")
    # the average is revealed by step 1's all-reduce phase (Cursor(0, 2)): graded as it begins
    assert autoplay(s) == [(Cursor(0, 2), 0.0)]
    ((question, feedback, scored),) = v.called("show_prediction_graded")
    assert question is q and feedback.correct and scored


def test_the_phases_before_the_revealing_one_grade_nothing() -> None:
    s, _, v = make()
    ready(s)
    s.lock_prediction(predict_question(s), -33.17)
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, "uneven-3-ranks.jsonl")
    for cursor in [Cursor(0, 0), Cursor(0, 1)]:
        s.on_stage_position(cursor, 0.0)
        s.on_stage_position(cursor, 1.0)
    assert v.called("show_prediction_graded") == []
    s.on_stage_position(Cursor(1, 1), 0.0)  # a jump past it (seek, follow-latest) grades it
    assert len(v.called("show_prediction_graded")) == 1
