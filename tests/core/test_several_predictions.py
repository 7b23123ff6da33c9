"""A lesson with several prediction questions (uneven-inputs asks two): each has its own locked
guess, locked in any order, and each is graded against the run it is about and no other
(the session controller with a fake transport and view, recorded runs: no Qt, no torch)."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.course import load_lesson
from ddp_viz.model.quiz import Question, placeholder_for
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.timeline import walk
from tests.conftest import load_recording
from tests.core.test_session import make, play, ready


def uneven_questions() -> tuple[Question, Question, list[Question]]:
    """The lesson's two predictions; the rank question asked of the recorded 2-rank run (the
    recording has 2 ranks, the lesson asks for 3: the rule under test is the same)."""
    questions = list(load_lesson("uneven-inputs").questions)
    rank_q = next(q for q in questions if q.id == "predict-missing-rank")
    join_q = next(q for q in questions if q.id == "predict-join-average")
    rank_q = dataclasses.replace(
        rank_q, quantity=dataclasses.replace(rank_q.quantity, world_size=None)
    )
    return rank_q, join_q, [rank_q if q.id == rank_q.id else q for q in questions]


def walk_all(s) -> None:
    for cursor in walk(s.record.complete_prefix()):
        s.on_stage_position(cursor, 1.0)


def graded(v) -> dict[str, tuple[bool, str]]:
    return {q.id: (fb.correct, fb.text) for q, fb, _ in v.called("show_prediction_graded")}


def test_both_predictions_lock_and_each_is_graded_by_its_own_run() -> None:
    s, _, v = make()
    ready(s)
    rank_q, join_q, questions = uneven_questions()
    s.set_questions(questions)
    # the first question first, then the last: locking the last must not replace the first
    assert "Locked in: 1" in s.lock_prediction(rank_q, 1)
    assert "Locked in: -13.28" in s.lock_prediction(join_q, -13.28)
    assert set(s.predictions) == {rank_q.id, join_q.id}
    s.request_run(default_scenario())
    play(s, "uneven-join.jsonl")  # join = true: the join question's run, not the rank one's
    notes = v.called("show_prediction_note")
    assert [q.id for q, _ in notes] == [rank_q.id]  # only the guess this run is not about
    assert "Join = true" in notes[0][1] and "no Find the hang" in notes[0][1]
    walk_all(s)
    # the join average from the raw events: rank 1's averaged weight gradient in step 4
    (avg,) = [
        e
        for e in load_recording("uneven-join.jsonl")
        if e.kind == "averaged_grad" and e.step == 3 and e.rank == 1
    ]
    assert abs(avg.grads["weight"][0] - -13.28) < 0.01 * 13.28  # the guess is right
    assert graded(v) == {join_q.id: (True, graded(v)[join_q.id][1])}
    assert set(s.predictions) == {rank_q.id}  # the rank guess is still locked
    s.request_run(default_scenario())
    play(s, "uneven-monitored-barrier.jsonl", run_id=2)
    walk_all(s)
    result = graded(v)
    # monitored_barrier names rank 1 of 2 (the last rank holds the extra batch): 1 is right
    assert result[rank_q.id][0] is True and "you predicted 1" in result[rank_q.id][1]
    assert s.predictions == {}


def test_a_wrong_guess_on_the_first_question_is_graded_wrong_in_the_other_order() -> None:
    s, _, v = make()
    ready(s)
    rank_q, join_q, questions = uneven_questions()
    s.set_questions(questions)
    s.lock_prediction(join_q, -26.57)  # rank 1's own gradient: not the average
    s.lock_prediction(rank_q, 0)  # rank 0 is the one that reports, never the one named
    s.request_run(default_scenario())
    play(s, "uneven-monitored-barrier.jsonl")
    walk_all(s)
    assert list(graded(v)) == [rank_q.id] and graded(v)[rank_q.id][0] is False
    s.request_run(default_scenario())
    play(s, "uneven-join.jsonl", run_id=2)
    walk_all(s)
    assert graded(v)[join_q.id][0] is False


def test_the_prediction_field_says_what_kind_of_number_it_wants() -> None:
    rank_q, join_q, _ = uneven_questions()
    assert "rank" in placeholder_for(rank_q) and "-12.5" not in placeholder_for(rank_q)
    assert "-12.5" in placeholder_for(join_q)  # a gradient may be negative and fractional
    for lesson in ("buckets", "who-splits-the-data", "sharded", "all-reduce"):
        (q,) = [q for q in load_lesson(lesson).questions if q.kind == "predict"]
        assert "-12.5" not in placeholder_for(q), lesson


def test_the_join_prediction_waits_for_the_two_rank_run_it_is_about() -> None:
    """Its prompt says rank 1 trains alone in step 4: true at 2 ranks only (at 3 the last
    rank has the extra batch and rank 1 joins), so a 3-rank run with Join must not grade it."""
    (join_q,) = [
        q for q in load_lesson("uneven-inputs").questions if q.id == "predict-join-average"
    ]
    assert join_q.quantity.world_size == 2
    assert "2 ranks" in join_q.quantity.conditions()
