"""The record's small rules, each met on both sides (model/timeline.py, pure): which tensors
are close, the number a view shows for a tensor, the mean of the ranks' gradients, how long a
run says it is, where its parameters start and the widest number the stage must fit. Three
or more ranks whose values differ, the odd one last; values computed here by hand."""

from __future__ import annotations

import math

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.timeline import (
    RunRecord,
    RunStatus,
    StepRecord,
    display_value,
    grads_close,
    max_abs_diff,
    record,
    scalar,
)
from tests.conftest import load_recording

SUMMARY = {"shape": [100], "norm": 5.0, "absmax": 2.0, "sample": [0.25, -1.5, 2.0]}


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"w": [1.0, 2.0]}, {"w": [1.0, 2.0]}, True),
        ({"w": [1.0, 2.0]}, {"w": [1.0, 2.0 + 1e-6]}, True),  # within 1e-5
        ({"w": [1.0, 2.0]}, {"w": [1.0, 2.0 + 1e-4]}, False),  # past it
        ({"w": [1.0]}, {"w": [1.0], "b": [0.0]}, False),  # another set of names
        (None, {"w": [1.0]}, False),
        ({"w": [1.0]}, None, False),
    ],
)
def test_grads_are_close_when_every_name_and_value_is(a, b, same) -> None:
    assert grads_close(a, b) is same


def test_grads_close_takes_its_tolerance() -> None:
    assert grads_close({"w": [1.0]}, {"w": [1.001]}, tol=1e-2)
    assert not grads_close({"w": [1.0]}, {"w": [1.001]}, tol=1e-4)


def test_the_largest_difference_is_over_the_names_both_hold() -> None:
    a = {"w": [1.0, 2.0, 3.0], "b": [0.5], "only_a": [100.0]}
    b = {"w": [1.0, 2.5, 2.0], "b": [0.25], "only_b": [-100.0]}
    assert max_abs_diff(a, b) == 1.0  # |3 - 2|, not the names one side lacks
    assert max_abs_diff({"w": SUMMARY}, {"w": {**SUMMARY, "sample": [0.25, -1.0, 2.0]}}) == 0.5
    assert math.isnan(max_abs_diff({"w": [1.0]}, {"b": [1.0]}))


def test_scalar_is_the_first_value_of_the_named_tensor() -> None:
    g = {"weight": [-2.5, 7.0], "big": SUMMARY}
    assert scalar(g, "weight") == -2.5 and scalar(g, "big") == 0.25
    assert math.isnan(scalar(g, "bias")) and math.isnan(scalar(None, "weight"))
    assert math.isnan(scalar({"weight": []}, "weight"))


def test_the_number_shown_for_a_tensor_is_its_value_or_its_norm() -> None:
    assert display_value([-2.5]) == -2.5  # one element: itself, sign and all
    assert display_value([3.0, -4.0]) == 5.0  # more: the L2 norm
    assert display_value(SUMMARY) == 5.0  # a summary: its norm, not its first value
    assert display_value({"shape": [1], "norm": 2.0, "sample": [-2.0]}) == 2.0
    assert math.isnan(display_value([])) and math.isnan(display_value(None))


def three_ranks(locals_: list[dict]) -> StepRecord:
    st = StepRecord(step=0)
    for r, g in enumerate(locals_):
        st.rank(r).local = g
    return st


def test_the_mean_of_the_ranks_gradients_is_over_every_rank() -> None:
    st = three_ranks(
        [
            {"w": [1.0, 2.0], "b": [0.0]},
            {"w": [4.0, 8.0], "b": [3.0]},
            {"w": [7.0, 5.0], "b": [9.0]},
        ]
    )
    assert st.mean_of_locals() == {"w": [4.0, 5.0], "b": [4.0]}
    st.rank(3)  # a rank that has not sent its gradient yet is not counted
    assert st.mean_of_locals() == {"w": [4.0, 5.0], "b": [4.0]}
    assert StepRecord(step=0).mean_of_locals() is None


def test_no_mean_of_summaries() -> None:
    st = three_ranks([{"w": [1.0]}, {"w": [2.0]}, {"w": SUMMARY}])
    assert st.mean_of_locals() is None


def test_a_step_is_complete_when_every_rank_of_the_world_reported_it() -> None:
    rec = record(load_recording("four-ranks-3-steps.jsonl"))
    st = rec.steps[0]
    assert st.complete(4) and not st.complete(5) and not st.complete(3)
    st.ranks[3].params = None
    assert not st.complete(4)


def test_the_ranks_agree_only_when_every_ranks_parameters_are_close() -> None:
    rec = record(load_recording("four-ranks-3-steps.jsonl"))
    st = rec.steps[1]
    assert st.ranks_agree() is True and st.averaged_agree() is True
    last = st.ranks[3]
    last.params = {n: [v[0] + 1e-3] for n, v in last.params.items()}
    last.averaged = {n: [v[0] + 1e-3] for n, v in last.averaged.items()}
    st.memo.clear()
    assert st.ranks_agree() is False and st.averaged_agree() is False
    last.params = None
    last.averaged = None
    st.memo.clear()
    assert st.ranks_agree() is None and st.averaged_agree() is None


def test_parameters_that_went_nan_agree_with_nothing() -> None:
    st = three_ranks([{}, {}, {}])
    for r in range(3):
        st.rank(r).params = {"w": [math.nan]}
    assert st.ranks_agree() is False


def test_averaged_and_params_after_are_the_first_rank_that_has_them() -> None:
    st = StepRecord(step=0)
    st.rank(0)
    st.rank(1).averaged = {"w": [2.0]}
    st.rank(1).params = {"w": [3.0]}
    st.rank(2).averaged = {"w": [9.0]}
    assert st.averaged() == {"w": [2.0]} and st.params_after() == {"w": [3.0]}
    assert StepRecord(step=0).averaged() is None and StepRecord(step=0).params_after() is None


def test_a_run_says_its_planned_length_then_the_steps_it_made_when_cut_short() -> None:
    events = load_recording("four-ranks-3-steps.jsonl")
    start = next(e for e in events if e.kind == "run_started")
    rec = RunRecord()
    rec.apply(start)
    assert rec.steps_total() == 3  # planned, before any step
    body = [e for e in events if e.kind not in ("run_finished", "run_started")]
    for e in body:  # step 3 without the last rank's report
        if not (getattr(e, "step", None) == 2 and getattr(e, "rank", None) == 3):
            rec.apply(e)
    rec.apply(protocol.RunCancelled(run=1))
    assert rec.complete_prefix() == 2 and rec.steps_total() == 2
    failed = RunRecord()
    failed.apply(start)
    failed.apply(protocol.RunFailed(run=1, reason="x"))
    assert failed.steps_total() == 1  # at least one, for "step 1 of 1"
    assert record(events).steps_total() == 3


def test_a_run_whose_length_was_not_known_counts_the_steps_seen() -> None:
    rec = RunRecord()
    rec.apply(
        protocol.RunStarted(run=1, world_size=2, steps=0, scenario=default_scenario().to_dict())
    )
    rec.apply(protocol.Params(run=1, step=4, rank=0, params={"w": [1.0]}))
    assert rec.steps_total() == 5


def test_the_initial_parameters_are_the_lowest_ranks_report() -> None:
    rec = record(load_recording("four-ranks-3-steps.jsonl"))
    assert rec.initial_agree() is True
    rec.initial = {2: {"w": [2.0]}, 1: {"w": [1.0]}, 3: {"w": [3.0]}}
    assert rec.initial_params() == {"w": [1.0]}
    assert rec.initial_agree() is None  # three of four ranks
    rec.initial[0] = {"w": [1.0]}
    assert rec.initial_agree() is False  # the others differ from rank 0's
    rec.initial = {r: {"w": [1.0]} for r in range(4)}
    assert rec.initial_agree() is True


def test_an_old_linear_recording_starts_from_the_scenarios_weight_and_bias() -> None:
    rec = record(load_recording("default-run.jsonl"))
    rec.initial = {}
    scenario = rec.scenario
    assert rec.initial_params() == {
        "weight": [float(scenario["init_weight"])],
        "bias": [float(scenario["init_bias"])],
    }
    mlp = record(load_recording("mlp-2-ranks-3-steps.jsonl"))
    mlp.initial = {}
    assert mlp.initial_params() == {}
    assert rec.params_before(0) == rec.initial_params()


def test_the_parameters_going_into_a_step_are_the_previous_steps() -> None:
    rec = record(load_recording("four-ranks-3-steps.jsonl"))
    assert rec.params_before(2) == rec.steps[1].params_after() != rec.steps[0].params_after()
    assert rec.params_before(1) == rec.steps[0].params_after()
    assert rec.params_before(-1) == rec.initial_params()
    assert rec.params_before(9) == rec.initial_params()  # past the record: nothing newer


def test_the_widest_number_on_the_stage_is_measured_from_the_values() -> None:
    rec = RunRecord()
    rec.apply(
        protocol.RunStarted(run=1, world_size=3, steps=1, scenario=default_scenario().to_dict())
    )
    assert rec.value_chars == 0
    rec.apply(protocol.LocalGrad(run=1, step=0, rank=0, loss=-12.5, grads={"w": [1.0]}))
    assert rec.value_chars == len("-12.5")
    rec.apply(protocol.AveragedGrad(run=1, step=0, rank=1, grads={"w": [-0.001234]}))
    assert rec.value_chars == len("-0.001234")
    rec.apply(protocol.Params(run=1, step=0, rank=2, params={"w": [3.0, 4.0]}))  # its norm: 5
    assert rec.value_chars == len("-0.001234")
    rec.apply(protocol.InitialParams(run=1, rank=2, params={"w": [123456789.0]}))
    assert rec.value_chars == len(f"{123456789.0:.4g}")
    light = protocol.LocalGrad(run=1, step=1, rank=0, loss=-1.23456e-300, grads={}, values=False)
    rec.apply(light)  # a step without values puts no number of its on the stage
    assert rec.value_chars == len(f"{123456789.0:.4g}")


def test_a_run_record_starts_again_at_its_run_started() -> None:
    rec = record(load_recording("four-ranks-3-steps.jsonl"))
    assert rec.status is RunStatus.FINISHED and rec.steps
    rec.apply(
        protocol.RunStarted(run=2, world_size=3, steps=5, scenario=default_scenario().to_dict())
    )
    assert (rec.run, rec.world_size, rec.steps_planned, rec.status) == (
        2,
        3,
        5,
        RunStatus.RUNNING,
    )
    assert rec.steps == [] and rec.initial == {} and rec.elapsed_s is None
    assert rec.complete_prefix() == 0
