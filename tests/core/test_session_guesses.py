"""A locked guess, word for word: what the session says beside the question, which run it is
bound to and graded by, and when it is dropped (the controller with a fake transport and view,
recorded runs: no Qt, no torch)."""

from __future__ import annotations

import dataclasses

from ddp_viz.model import protocol
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.timeline import Cursor, walk
from tests.conftest import load_recording
from tests.core.test_session import make, play, predict_question, ready
from tests.core.test_session_words import started


def show_to_end(s) -> None:  # type: ignore[no-untyped-def]
    """The stage shown through every phase of the run, each phase whole."""
    for cursor in walk(s.record.complete_prefix()):
        s.on_stage_position(cursor, 1.0)


def test_a_locked_guess_says_what_to_run_and_that_the_stage_will_reveal_it() -> None:
    s, _, _ = make()
    ready(s)
    q = predict_question(s)
    assert s.lock_prediction(q, -33.17) == (
        "Locked in: -33.17. Now press Run with 3 ranks; the stage will reveal the real value."
    )
    assert s.predictions[q.id].value == -33.17 and s.predictions[q.id].run is None
    assert s.predictions[q.id].practice is False


def test_a_guess_locked_after_the_value_was_shown_says_it_is_practice() -> None:
    s, _, _ = make()
    ready(s)
    q = predict_question(s)
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, "uneven-3-ranks.jsonl")
    show_to_end(s)
    assert s.lock_prediction(q, -33) == (
        "Locked in: -33. You have already seen this value on the stage, so this guess is "
        "practice and does not score. Press Run with 3 ranks."
    )
    assert s.predictions[q.id].practice is True


def test_new_questions_forget_what_was_revealed_and_locked() -> None:
    s, _, _ = make()
    ready(s)
    q = predict_question(s)
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, "uneven-3-ranks.jsonl")
    show_to_end(s)
    assert s.revealed == {q.id}
    s.lock_prediction(q, 1.0)
    predict_question(s)  # the lesson again
    assert s.revealed == set() and s.predictions == {}
    assert [x.id for x in s.questions] == [q.id]  # only the questions with a quantity


def test_a_guess_for_another_world_size_is_noted_and_stays_unbound() -> None:
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    s.lock_prediction(q, -33.17)
    s.request_run(default_scenario())
    play(s, "default-run.jsonl")  # 2 ranks
    ((question, note),) = v.called("show_prediction_note")
    assert question is q and note == (
        "Your guess of -33.17 is for a run with 3 ranks; this run has 2 ranks. "
        "It stays locked for a run with 3 ranks."
    )
    p = s.predictions[q.id]
    assert (p.value, p.run, p.practice) == (-33.17, None, False)


def test_a_guess_is_bound_to_the_run_it_is_about_and_keeps_its_practice_mark() -> None:
    s, _, _ = make()
    ready(s)
    q = predict_question(s)
    s.revealed.add(q.id)
    s.lock_prediction(q, -33.0)
    s.request_run(default_scenario())
    s.on_transport_event(started(2, world=3, run=1))
    p = s.predictions[q.id]
    assert (p.value, p.run, p.practice) == (-33.0, 1, True)


def test_a_guess_whose_run_ended_before_its_value_is_dropped_not_graded() -> None:
    """A run cut short before step 1's average: nothing to grade; a run that has the value
    keeps the guess for the stage to grade."""
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    s.lock_prediction(q, -33.17)
    s.request_run(default_scenario())
    events = load_recording("uneven-3-ranks.jsonl")
    (start,) = [e for e in events if e.kind == "run_started"]
    s.on_transport_event(start)
    s.on_transport_event(protocol.RunFailed(run=start.run, reason="ranks died"))
    assert s.predictions == {}
    for cursor in walk(max(1, s.record.complete_prefix())):
        s.on_stage_position(cursor, 1.0)
    assert v.called("show_prediction_graded") == []
    s.lock_prediction(q, -33.17)
    s.request_run(default_scenario())
    play(s, "uneven-3-ranks.jsonl", run_id=2)
    assert set(s.predictions) == {q.id}  # the value is there: kept for the stage


def test_a_guess_is_graded_against_the_run_it_was_bound_to_not_a_reopened_one() -> None:
    """Locked, then a recording opened: the guess binds to that run and is graded by it;
    a guess bound to another run number is not graded by this one."""
    s, _, v = make()
    q = predict_question(s)
    s.lock_prediction(q, -33.17)
    s.replay(load_recording("uneven-3-ranks.jsonl"))
    s.predictions[q.id] = dataclasses.replace(s.predictions[q.id], run=9)
    show_to_end(s)
    assert v.called("show_prediction_graded") == [] and set(s.predictions) == {q.id}
    assert s.revealed == {q.id}  # the value was shown all the same


def test_no_guess_locks_while_a_run_is_under_way_and_it_says_so() -> None:
    s, _, _ = make()
    ready(s)
    q = predict_question(s)
    s.request_run(default_scenario())
    assert s.lock_prediction(q, 1.0) == "A run is under way: lock your guess before the next Run."
    assert s.predictions == {}


def test_a_guess_locks_before_the_lesson_named_its_questions() -> None:
    s, _, _ = make()
    q = predict_question()  # the controller was not told the lesson's questions
    assert s.lock_prediction(q, -33.17).startswith("Locked in: -33.17. Now press Run with 3")


def test_a_guess_on_a_question_with_no_quantity_names_no_run() -> None:
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    bare = dataclasses.replace(q, id="by-hand", quantity=None)
    assert s.lock_prediction(bare, 2) == (
        "Locked in: 2. Now press Run; the stage will reveal the real value."
    )
    s.lock_prediction(q, -33.17)  # locked after it: still bound and graded
    s.request_run(default_scenario())
    play(s, "uneven-3-ranks.jsonl")
    assert s.predictions[q.id].run == 1 and s.predictions["by-hand"].run is None
    show_to_end(s)
    assert [fb.correct for _, fb, _ in v.called("show_prediction_graded")] == [True]


def test_a_practice_guess_stays_practice_through_a_run_it_is_not_about() -> None:
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    s.request_run(default_scenario())
    play(s, "uneven-3-ranks.jsonl")
    show_to_end(s)
    s.lock_prediction(q, -33.17)  # seen already: practice
    s.request_run(default_scenario())
    play(s, "default-run.jsonl", run_id=2)  # 2 ranks: not its run
    assert s.predictions[q.id].practice is True and s.predictions[q.id].run is None
    s.request_run(default_scenario())
    play(s, "uneven-3-ranks.jsonl", run_id=3)
    show_to_end(s)
    ((_, feedback, scored),) = v.called("show_prediction_graded")
    assert feedback.correct and scored is False


def test_a_run_the_question_is_not_about_reveals_nothing() -> None:
    """Watching a 2-rank run to its end does not show the 3-rank average: a guess locked
    afterwards still scores."""
    s, _, _ = make()
    ready(s)
    q = predict_question(s)
    s.request_run(default_scenario())
    play(s, "default-run.jsonl")
    show_to_end(s)
    assert s.revealed == set()
    assert "practice" not in s.lock_prediction(q, -33.17)


def test_each_question_is_graded_at_its_own_step_whatever_their_order() -> None:
    """Two questions about the same run, the later step first in the lesson: the earlier
    one is graded as soon as its value is on the stage, the later one at its own step."""
    s, _, v = make()
    ready(s)
    q1 = predict_question()
    q2 = dataclasses.replace(q1, id="step-2", quantity=dataclasses.replace(q1.quantity, step=2))
    s.set_questions([q2, q1])
    s.lock_prediction(q2, 0.0)
    s.lock_prediction(q1, -33.17)
    s.request_run(default_scenario())
    play(s, "uneven-3-ranks.jsonl")
    when = {}
    for cursor in walk(s.record.complete_prefix()):
        before = len(v.called("show_prediction_graded"))
        s.on_stage_position(cursor, 1.0)
        for q, _, _ in v.called("show_prediction_graded")[before:]:
            when[q.id] = cursor
    assert when == {q1.id: Cursor(0, 2), "step-2": Cursor(1, 2)}
