"""The quiz's own rules, one by one (pure: no Qt, no torch): what a lesson file may say, how a
choice and a prediction are graded and worded, what the prediction field accepts and shows,
which run a quantity is about, and what the score counts. Expected values are written out by
hand here, never computed with the code under test."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ddp_viz.model import quiz
from ddp_viz.model.quiz import Quantity, Question, Score
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording


def _choice(**over) -> dict:
    raw = {"id": "q1", "kind": "choice", "prompt": "Why?", "choices": ["a", "b", "c"]}
    raw["answer"] = 1
    return raw | over


def _predict(**quantity) -> dict:
    return {"id": "p1", "kind": "predict", "prompt": "How much?", "quantity": quantity}


def _error(raws) -> str:
    with pytest.raises(ValueError) as err:
        quiz.parse_questions(raws)
    return str(err.value)


# --- parse_questions -----------------------------------------------------------------------


def test_a_choice_question_keeps_every_field_it_was_given() -> None:
    raw = _choice(explain="Because.", why_not=["x", "", "z"], tolerance=3)
    (q,) = quiz.parse_questions([raw])
    assert q == Question(
        id="q1",
        kind="choice",
        prompt="Why?",
        explain="Because.",
        choices=("a", "b", "c"),
        answer=1,
        why_not=("x", "", "z"),
        quantity=None,
        tolerance=3.0,
    )
    assert isinstance(q.tolerance, float)


def test_defaults_of_a_question_left_out_of_the_lesson_file() -> None:
    (q,) = quiz.parse_questions([_predict(what="loss")])
    assert (q.explain, q.choices, q.answer, q.why_not, q.tolerance) == ("", (), None, (), 0.01)
    assert q.quantity == Quantity(what="loss")


def test_every_question_is_parsed_in_the_order_written() -> None:
    qs = quiz.parse_questions([_choice(id="one"), _predict(what="loss"), _choice(id="three")])
    assert [q.id for q in qs] == ["one", "p1", "three"]


@pytest.mark.parametrize("kind", [None, "essay", "Choice"])
def test_an_unknown_kind_is_refused_naming_the_question(kind) -> None:
    msg = _error([_choice(id="q7", kind=kind)])
    assert msg == f"question q7: unknown kind {kind!r}"


def test_a_question_without_an_id_is_named_by_a_question_mark() -> None:
    raw = _choice(kind="essay")
    del raw["id"]
    assert _error([raw]) == "question ?: unknown kind 'essay'"


@pytest.mark.parametrize("answer", [None, -1, 3, 7])
def test_a_choice_answer_must_index_one_of_its_choices(answer) -> None:
    assert _error([_choice(answer=answer)]) == "question q1: answer must index one of its choices"


@pytest.mark.parametrize("answer", [0, 2])
def test_the_first_and_the_last_choice_are_answers(answer) -> None:
    (q,) = quiz.parse_questions([_choice(answer=answer)])
    assert q.answer == answer


def test_a_predict_question_needs_a_quantity_table() -> None:
    raw = _predict()
    del raw["quantity"]
    assert _error([raw]) == "question p1: predict questions need a [question.quantity] table"
    raw["quantity"] = "loss"
    assert _error([raw]) == "question p1: predict questions need a [question.quantity] table"


def test_a_choice_question_ignores_a_quantity() -> None:
    (q,) = quiz.parse_questions([_choice(quantity={"what": "nonsense"})])
    assert q.quantity is None


# --- the quantity table -------------------------------------------------------------------


def test_a_quantity_keeps_every_key_and_its_when_table_in_order() -> None:
    (q,) = quiz.parse_questions(
        [
            _predict(
                what="averaged",
                param="weight",
                step=3,
                rank=2,
                index=5,
                world_size=4,
                bucket_cap_mb=0.25,
                when={"train.no_sync": "backward_only", "train.accumulate": 2},
                ignored="yes",
            )
        ]
    )
    assert q.quantity == Quantity(
        what="averaged",
        param="weight",
        step=3,
        rank=2,
        index=5,
        world_size=4,
        bucket_cap_mb=0.25,
        when=(("train.no_sync", "backward_only"), ("train.accumulate", 2)),
    )


def test_a_when_that_is_not_a_table_is_refused() -> None:
    msg = _error([_predict(what="loss", when=["train.no_sync"])])
    assert msg == "question p1: quantity.when is a table of scenario settings"


def test_an_unknown_quantity_names_every_known_one_the_core_s_and_the_kinds() -> None:
    msg = _error([_predict(what="gradient")])
    assert msg.startswith("question p1: quantity.what must be one of loss, local, averaged, ")
    listed = msg.split("one of ")[1].split(", ")
    for known in ("params", "buckets", "rows", "steps_done", "ring_bytes", "missing_rank"):
        assert known in listed


@pytest.mark.parametrize("what", ["local", "averaged", "params", "held_bytes", "hook_bytes"])
def test_a_per_parameter_quantity_needs_its_parameter(what) -> None:
    assert _error([_predict(what=what)]) == "question p1: quantity.param names the parameter"
    (q,) = quiz.parse_questions([_predict(what=what, param="weight")])
    assert q.quantity.param == "weight"


@pytest.mark.parametrize(
    "what", ["loss", "buckets", "rows", "steps_done", "ring_bytes", "missing_rank", "allreduces"]
)
def test_a_quantity_of_the_whole_step_needs_no_parameter(what) -> None:
    (q,) = quiz.parse_questions([_predict(what=what)])
    assert q.quantity.what == what


def test_steps_count_from_one() -> None:
    assert _error([_predict(what="loss", step=0)]) == "question p1: quantity.step counts from 1"
    (q,) = quiz.parse_questions([_predict(what="loss", step=1)])
    assert q.quantity.step == 1


# --- which run a quantity is about -------------------------------------------------------


def _run(world_size=2, **scenario):
    return SimpleNamespace(world_size=world_size, scenario=scenario)


def test_a_quantity_with_no_conditions_matches_every_run_and_says_nothing() -> None:
    q = Quantity(what="loss")
    assert q.matches(_run(3)) and q.matches(_run(8, ddp={"bucket_cap_mb": 1}))
    assert q.conditions() == "" and q.mismatch(_run(5)) == ""


def test_world_size_and_settings_must_all_match() -> None:
    q = Quantity(world_size=4, bucket_cap_mb=0.25, when=(("train.no_sync", "backward_only"),))
    good = _run(4, ddp={"bucket_cap_mb": 0.25}, train={"no_sync": "backward_only"})
    assert q.matches(good)
    assert not q.matches(_run(3, ddp={"bucket_cap_mb": 0.25}, train={"no_sync": "backward_only"}))
    assert not q.matches(_run(4, ddp={"bucket_cap_mb": 25}, train={"no_sync": "backward_only"}))
    assert not q.matches(_run(4, ddp={"bucket_cap_mb": 0.25}, train={"no_sync": "never"}))
    assert not q.matches(_run(4, ddp={"bucket_cap_mb": 0.25}))


def test_the_conditions_read_as_words_in_the_prompt() -> None:
    """In the form's words (its labels and its choices), so the learner knows what to set; a
    setting the form does not show by its last key."""
    q = Quantity(
        world_size=4,
        bucket_cap_mb=0.25,
        when=(("train.no_sync", "backward_only"), ("train.find_unused", True), ("lr", 0.5)),
    )
    assert q.conditions() == (
        " with 4 ranks and Bucket (MiB) = 0.25 and no_sync() = backward only"
        " and find_unused = true and Learning rate = 0.5"
    )
    placed = Quantity(when=(("train.no_sync", "forward_and_backward"), ("train.accumulate", 3)))
    assert placed.conditions() == " with no_sync() = fwd + backward and Micro-batches = 3"
    # a value with no word of its own is shown as the file has it
    assert Quantity(when=(("train.no_sync", "never"),)).conditions() == (
        ' with no_sync() = "never"'
    )
    assert Quantity(world_size=3).conditions() == " with 3 ranks"
    assert Quantity(when=(("ddp.static_graph", False),)).conditions() == (
        " with static_graph = false"
    )


def test_the_mismatch_names_what_this_run_has_instead() -> None:
    q = Quantity(world_size=4, bucket_cap_mb=0.25, when=(("train.no_sync", "backward_only"),))
    assert q.mismatch(_run(3, ddp={"bucket_cap_mb": 25}, train={})) == (
        "3 ranks and Bucket (MiB) = 25 and no no_sync()"
    )
    assert q.mismatch(_run(4, ddp={"bucket_cap_mb": 0.25}, train={"no_sync": "never"})) == (
        'no_sync() = "never"'
    )
    assert q.mismatch(_run(4, ddp={"bucket_cap_mb": 0.25}, train={"no_sync": "none"})) == (
        "no_sync() = none"
    )
    both = _run(4, ddp={"bucket_cap_mb": 0.25}, train={"no_sync": "backward_only"})
    assert q.mismatch(both) == ""


def test_a_setting_compares_as_a_number_a_flag_or_a_word() -> None:
    flag = Quantity(when=(("ddp.static_graph", True),))
    assert flag.matches(_run(ddp={"static_graph": True}))
    assert not flag.matches(_run(ddp={"static_graph": 1}))  # 1 is not the flag true
    assert flag.mismatch(_run(ddp={"static_graph": False})) == "static_graph = false"
    number = Quantity(when=(("lr", 0.3),))
    assert number.matches(_run(lr=0.1 + 0.2))  # 0.30000000000000004: the same setting
    assert number.matches(_run(lr=0.3))
    assert not number.matches(_run(lr=0.3001))
    whole = Quantity(when=(("train.accumulate", 2),))
    assert whole.matches(_run(train={"accumulate": 2.0}))
    assert not whole.matches(_run(train={"accumulate": True}))
    word = Quantity(when=(("hook", "fp16"),))
    assert word.matches(_run(hook="fp16")) and not word.matches(_run(hook="bf16"))
    assert not word.matches(_run(hook={"fp16": 1}))


def test_a_dotted_setting_under_a_value_that_is_not_a_table_is_missing() -> None:
    q = Quantity(when=(("train.no_sync", "never"),))
    assert q.mismatch(_run(train="never")) == "no no_sync()"
    unshown = Quantity(when=(("train.find_unused", True),))  # no label: its last key
    assert unshown.mismatch(_run(train="x")) == "no find_unused"


# --- which step reveals a quantity -------------------------------------------------------


def test_the_phase_of_each_core_quantity_and_a_kind_s() -> None:
    phases = {w: Quantity(what=w).phase for w in ("loss", "local", "averaged", "params")}
    assert phases == {"loss": "local", "local": "local", "averaged": "allreduce", "params": "step"}
    assert Quantity(what="buckets").phase == "shards"
    assert Quantity(what="rows").phase == "local"
    assert Quantity(what="held_bytes").phase == "shards"
    assert Quantity(what="allreduces").phase == "allreduce"
    assert Quantity(what="no such thing").phase == "step"
    assert quiz.revealed_in("no such thing") is None


def test_a_value_of_a_step_is_revealed_at_that_step_one_known_at_the_end_at_the_last() -> None:
    run = SimpleNamespace(complete_prefix=lambda: 5)
    assert Quantity(what="averaged", step=3).reveal_step(run) == 2
    assert Quantity(what="ring_bytes", step=2).reveal_step(run) == 1
    assert Quantity(what="steps_done", step=1).reveal_step(run) == 4
    assert Quantity(what="missing_rank", step=1).reveal_step(run) == 4
    empty = SimpleNamespace(complete_prefix=lambda: 0)
    assert Quantity(what="steps_done").reveal_step(empty) == 0


# --- reading a value from a recorded run --------------------------------------------------


def _raw(name: str) -> list[dict]:
    """The recording's lines as plain JSON: what the ranks sent, not what the record made."""
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line]


@pytest.mark.parametrize("name", ["four-ranks-3-steps.jsonl", "mlp-2-ranks-3-steps.jsonl"])
def test_read_takes_the_step_rank_parameter_and_element_asked_for(name) -> None:
    rec = record(load_recording(name))
    sent = {"local": "local_grad", "averaged": "averaged_grad", "params": "params"}
    checked = 0
    for what, event in sent.items():
        for e in (e for e in _raw(name) if e["event"] == event):
            values = e["grads"] if what != "params" else e["params"]
            for param, tensor in values.items():
                for index in sorted({0, len(tensor) - 1}):
                    q = Quantity(what, param, e["step"] + 1, e["rank"], index)
                    assert q.read(rec) == tensor[index], (what, param, e["step"], e["rank"])
                    checked += 1
            if what == "local":
                q = Quantity("loss", step=e["step"] + 1, rank=e["rank"])
                assert q.read(rec) == e["loss"]
                assert Quantity("rows", step=e["step"] + 1, rank=e["rank"]).read(rec) == len(
                    e["rows"]
                )
    assert checked > 30


def test_the_recordings_read_differ_between_steps_ranks_and_elements() -> None:
    # without this, reading the wrong step, rank or element would pass the test above
    four = [e for e in _raw("four-ranks-3-steps.jsonl") if e["event"] == "local_grad"]
    assert len({(e["step"], e["grads"]["weight"][0]) for e in four if e["rank"] == 3}) == 3
    assert len({e["grads"]["weight"][0] for e in four if e["step"] == 1}) == 4
    assert len({e["loss"] for e in four if e["step"] == 1}) == 4
    mlp = next(e for e in _raw("mlp-2-ranks-3-steps.jsonl") if e["event"] == "local_grad")
    assert mlp["grads"]["0.weight"][0] != mlp["grads"]["0.weight"][-1]


def test_read_has_nothing_where_the_run_has_nothing() -> None:
    rec = record(load_recording("mlp-2-ranks-3-steps.jsonl"))
    assert Quantity("loss", step=4).read(rec) is None  # three steps were run
    assert Quantity("loss", step=3, rank=1).read(rec) is not None
    assert Quantity("loss", step=1, rank=2).read(rec) is None  # ranks 0 and 1
    assert Quantity("local", "no_such", step=1).read(rec) is None
    assert Quantity("local", "0.weight", step=1, index=8).read(rec) is None  # 8 values
    assert Quantity("local", "0.weight", step=1, index=7).read(rec) is not None


def test_steps_done_waits_for_the_end_of_the_run() -> None:
    events = load_recording("four-ranks-3-steps.jsonl")
    assert events[-1].kind == "run_finished"
    assert Quantity(what="steps_done").read(record(events[:-1])) is None
    assert Quantity(what="steps_done").read(record(events)) == 3.0


# --- the choices' order -------------------------------------------------------------------


def _q(qid: str, n: int) -> Question:
    return Question(qid, "choice", "?", "", choices=tuple("abcdefgh"[:n]), answer=0)


def test_every_choice_is_shown_once_and_the_same_way_each_time() -> None:
    q = _q("q1", 6)
    order = quiz.display_order(q, "learner-a")
    assert sorted(order) == list(range(6))
    assert quiz.display_order(q, "learner-a") == order


def test_learners_and_questions_each_get_their_own_order() -> None:
    q = _q("q1", 6)
    by_learner = {quiz.display_order(q, f"learner-{i}") for i in range(12)}
    by_question = {quiz.display_order(_q(f"q{i}", 6), "learner-a") for i in range(12)}
    assert len(by_learner) > 6 and len(by_question) > 6
    # the answer (index 0) is not always shown first
    assert {o.index(0) for o in by_learner} != {0}


# --- grading ------------------------------------------------------------------------------


def test_a_right_choice_says_so_and_explains() -> None:
    q = Question("q", "choice", "?", "DDP averages.", ("a", "b"), 1, ("not a", "not b"))
    assert quiz.grade_choice(q, 1) == quiz.Feedback(True, "Right. DDP averages.")


def test_a_wrong_choice_says_why_not_then_explains() -> None:
    q = Question("q", "choice", "?", "DDP averages.", ("a", "b", "c"), 1, ("It sums.", "", ""))
    assert quiz.grade_choice(q, 0) == quiz.Feedback(False, "Not quite. It sums. DDP averages.")
    assert quiz.grade_choice(q, 2) == quiz.Feedback(False, "Not quite. DDP averages.")
    short = Question("q", "choice", "?", "", ("a", "b", "c"), 1, ("It sums.",))
    assert quiz.grade_choice(short, 2) == quiz.Feedback(False, "Not quite.")


def test_a_prediction_is_right_within_its_tolerance_on_either_side() -> None:
    q = Question("p", "predict", "?", "", tolerance=0.01)
    assert quiz.prediction_is_right(q, 101.0, 100.0)
    assert quiz.prediction_is_right(q, 99.0, 100.0)
    assert not quiz.prediction_is_right(q, 101.01, 100.0)
    assert not quiz.prediction_is_right(q, 98.99, 100.0)
    assert quiz.prediction_is_right(q, -101.0, -100.0)
    assert not quiz.prediction_is_right(q, 100.0, -100.0)
    wide = Question("p", "predict", "?", "", tolerance=0.5)
    assert quiz.prediction_is_right(wide, 149.0, 100.0)
    assert not quiz.prediction_is_right(wide, 151.0, 100.0)


def test_a_prediction_of_zero_has_an_absolute_floor() -> None:
    q = Question("p", "predict", "?", "", tolerance=0.01)
    assert quiz.prediction_is_right(q, 0.001, 0.0)
    assert quiz.prediction_is_right(q, -0.001, 0.0)
    assert not quiz.prediction_is_right(q, 0.0011, 0.0)


def test_the_prediction_s_feedback_shows_both_numbers() -> None:
    q = Question("p", "predict", "?", "Four ranks.", tolerance=0.01)
    right = quiz.grade_prediction(q, 2.0, 2.0123456789)
    assert right == quiz.Feedback(
        True, "Right: you predicted 2; the ranks computed 2.01235. Four ranks."
    )
    wrong = quiz.grade_prediction(q, -0.5, 1234567.0)
    assert wrong == quiz.Feedback(
        False, "Not quite: you predicted -0.5; the ranks computed 1.23457e+06. Four ranks."
    )


# --- the prediction field -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("12", 12.0), (" -3.5 ", -3.5), ("−3,5", -3.5), ("1e-3", 0.001), ("0,25", 0.25)],
)
def test_a_prediction_may_use_a_unicode_minus_and_a_decimal_comma(text, value) -> None:
    assert quiz.parse_prediction(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "two", "1,000.5"])
def test_what_is_not_a_number_is_named(text) -> None:
    with pytest.raises(ValueError) as err:
        quiz.parse_prediction(text)
    assert str(err.value) == f"{text!r} is not a number"


@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "1e999"])
def test_a_prediction_must_be_finite(text) -> None:
    with pytest.raises(ValueError) as err:
        quiz.parse_prediction(text)
    assert str(err.value) == "enter a finite number"


@pytest.mark.parametrize(
    ("what", "shown"),
    [
        ("buckets", "your prediction: a number of buckets"),
        ("rows", "your prediction: a number of rows"),
        ("steps_done", "your prediction: a number of steps"),
        ("ring_bytes", "your prediction: a number of bytes"),
        ("missing_rank", "your prediction: a rank number"),
        ("averaged", "your prediction, e.g. -12.5"),
        ("loss", "your prediction, e.g. -12.5"),
    ],
)
def test_the_empty_field_says_what_kind_of_number_to_enter(what, shown) -> None:
    q = Question("p", "predict", "?", "", quantity=Quantity(what=what, param="w"))
    assert quiz.placeholder_for(q) == shown


def test_a_question_without_a_quantity_gets_the_plain_placeholder() -> None:
    assert quiz.placeholder_for(_q("q", 2)) == "your prediction, e.g. -12.5"


# --- the score ----------------------------------------------------------------------------


def test_only_the_first_answer_scores() -> None:
    s = Score()
    s.record("a", False)
    s.record("a", True)
    s.record("b", True)
    assert (s.correct, s.answered) == (1, 2)
    assert s.text(5) == "Score: 1 / 5 first answers right (2 answered)"


def test_passing_needs_every_question_right_at_least_once_by_its_latest_answer() -> None:
    s = Score()
    assert not s.passed(0)
    assert not s.passed(2)
    s.record("a", False)
    s.record("b", True)
    assert not s.passed(2)
    s.record_practice("a", True)
    assert s.passed(2)
    assert not s.passed(3)  # a question not yet answered
    assert (s.correct, s.answered) == (1, 2)  # practice counts toward passing only
    s.record("b", False)
    assert not s.passed(2)


def test_practice_before_any_answer_does_not_count_as_answered() -> None:
    s = Score()
    s.record_practice("a", True)
    assert (s.correct, s.answered) == (0, 0)
    assert s.passed(1)


def test_a_setting_must_match_far_closer_than_a_tolerance_of_1e_5() -> None:
    q = Quantity(when=(("lr", 0.3),))
    assert not q.matches(_run(lr=0.3000001))  # 3e-7 apart: another setting


def test_a_why_not_list_one_short_reads_as_none_for_the_last_choice() -> None:
    q = Question("q", "choice", "?", "E.", ("a", "b", "c"), 0, ("", "Not b."))
    assert quiz.grade_choice(q, 2) == quiz.Feedback(False, "Not quite. E.")
    assert quiz.grade_choice(q, 1) == quiz.Feedback(False, "Not quite. Not b. E.")


def test_a_deeper_setting_is_named_by_its_last_part() -> None:
    q = Quantity(when=(("a.b.c", 1),))
    assert q.mismatch(_run(a={"b": {"c": 2}})) == "c = 2"
    assert q.conditions() == " with c = 1"


def test_rows_wait_for_the_ranks_loss_not_its_timings() -> None:
    events = load_recording("four-ranks-3-steps.jsonl")
    first = next(i for i, e in enumerate(events) if e.kind == "local_grad")
    timing = next(e for e in events if e.kind == "timing" and (e.step, e.rank) == (0, 0))
    rec = record([*events[:first], timing])  # rank 0's timings of step 1, not its gradients
    assert Quantity("rows", step=1, rank=0).read(rec) is None
