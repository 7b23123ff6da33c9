"""The record's rules at their edges (model/timeline.py, pure): a step asked past the record,
a reference and averages of mixed forms, summaries without digests, the middle rank astray,
one rank alone, tolerances just past, a model of two parameters that is not the linear one."""

from __future__ import annotations

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.timeline import RunRecord, StepRecord, max_abs_diff, record
from tests.conftest import load_recording


def with_reference(avgs: list[dict], full: dict, reported: dict | None = None) -> StepRecord:
    st = StepRecord(step=0)
    for r, g in enumerate(avgs):
        st.rank(r).averaged = g
    if reported is not None:
        st.rank(0).vs_full_batch = reported
    st.reference = protocol.Reference(run=1, step=0, full_batch_grads=full, manual_average=full)
    return st


def summary(norm: float = 50.0, digest: str | None = None, absmax: float = 200.0) -> dict:
    s = {"shape": [100], "norm": norm, "absmax": absmax, "sample": [1.0]}
    return s if digest is None else {**s, "digest": digest}


def test_list_averages_against_a_summary_reference_use_the_reported_difference() -> None:
    full = {"w": summary()}
    avgs = [{"w": [1.0, 2.0]}] * 3
    assert with_reference(avgs, full, {"w": 1e-3}).average_is_full_batch() is True
    assert with_reference(avgs, full, {"w": 3e-3}).average_is_full_batch() is False


@pytest.mark.parametrize(("diff", "same"), [(5e-6, True), (1.5e-5, False)])
def test_summary_averages_against_a_list_reference_are_held_to_1e_5(diff, same) -> None:
    avgs = [{"w": summary(digest="d")}] * 3
    got = with_reference(avgs, {"w": [1.0, 2.0]}, {"w": diff}).average_is_full_batch()
    assert got is same


@pytest.mark.parametrize(
    ("norms", "same"),
    [((50.0, 50.0, 50.0), True), ((50.0, 50.0, 50.1), False), ((50.0, 50.1, 50.0), False)],
)
def test_summaries_without_digests_agree_by_their_norms_on_every_rank(norms, same) -> None:
    avgs = [{"w": summary(n)} for n in norms]
    st = with_reference(avgs, {"w": summary()}, {"w": 0.0})
    assert st.average_is_full_batch() is same


def test_a_digest_astray_on_the_middle_rank_is_caught_too() -> None:
    avgs = [{"w": summary(digest=d)} for d in ("a", "b", "a")]
    assert with_reference(avgs, {"w": summary()}, {"w": 0.0}).average_is_full_batch() is False


def test_the_mean_of_one_ranks_gradient_is_itself() -> None:
    st = StepRecord(step=0)
    st.rank(0).local = {"w": [2.0, -1.0]}
    st.rank(1)
    st.rank(2)
    assert st.mean_of_locals() == {"w": [2.0, -1.0]}


def test_the_largest_difference_is_over_the_values_both_show() -> None:
    a = {"w": [1.0, 2.0, 3.0]}
    b = {"w": {"shape": [100], "norm": 1.0, "sample": [1.5, 2.0]}}  # 2 sampled values
    assert max_abs_diff(a, b) == 0.5


def start(scenario: dict, params: list[dict], world: int = 3) -> RunRecord:
    rec = RunRecord()
    assert rec.apply(
        protocol.RunStarted(run=1, world_size=world, steps=1, scenario=scenario, params=params)
    )
    return rec


def test_a_two_parameter_model_that_is_not_linear_has_no_starting_values_made_up() -> None:
    params = [{"name": "0.weight", "shape": [2, 1]}, {"name": "0.bias", "shape": [2]}]
    rec = start({"model": {"kind": "mlp"}, "init_weight": 0.5, "init_bias": 0.0}, params)
    assert rec.initial_params() == {}


def test_ranks_must_start_within_1e_6_not_the_gradients_1e_5() -> None:
    rec = record(load_recording("four-ranks-3-steps.jsonl"))
    first = rec.initial[0]
    rec.initial[3] = {n: [v[0] * (1 + 5e-6) + 5e-6] for n, v in first.items()}
    assert rec.initial_agree() is False


def test_events_that_name_no_run_belong_to_the_run_under_way() -> None:
    rec = start(default_scenario().to_dict(), [])
    ready = protocol.EngineReady(pid=1, version="0")
    assert rec.apply(ready) is True and rec.events[-1] is ready


def test_a_number_free_event_leaves_the_widest_number_at_nothing() -> None:
    rec = start(default_scenario().to_dict(), [])
    rec.apply(protocol.RankStarted(run=1, rank=0, pid=3, rows=[0]))
    assert rec.value_chars == 0
    rec.apply(protocol.LocalGrad(run=1, step=0, rank=0, loss=1.0, grads={"w": [-0.001234]}))
    assert rec.value_chars == len("-0.001234")  # the gradient's, wider than the loss's "1"


def test_the_parameters_going_into_a_step_past_the_record_are_the_initial_ones() -> None:
    rec = record(load_recording("four-ranks-3-steps.jsonl"))
    assert rec.params_before(4) == rec.initial_params()  # the step after the last recorded


def test_the_step_after_a_step_without_values_starts_from_nothing_known() -> None:
    rec = record(load_recording("long-run-32-steps.jsonl"))
    assert rec.steps[19].has_values and not rec.steps[20].has_values
    assert rec.params_before(21) == {}  # the step before it (0-based 20) recorded no values
    assert rec.params_before(20) == rec.steps[19].params_after()


def test_identical_parameters_with_a_nan_after_a_number_do_not_agree() -> None:
    """Even one list held by every rank (equal at C speed): a non-finite value agrees with
    none, and the finite ones beside it are compared within the tolerance."""
    same = [1.0, float("nan")]
    st = StepRecord(step=0)
    for r in range(3):
        st.rank(r).params = {"w": same}
    assert st.ranks_agree() is False


def test_an_uneven_step_waits_for_the_last_report_of_each_rank_that_trains_it() -> None:
    """Asked mid-stream: the rank that reports step 1 last has sent its gradient but not its
    parameters, so step 1 is not complete yet; its parameters make it so."""
    events = load_recording("uneven-join.jsonl")
    last = [e for e in events if e.kind == "params" and e.step == 0][-1]
    i = events.index(last)
    rec = record(events[:i])
    assert rec.steps[0].ranks[last.rank].local is not None
    assert rec.complete_prefix() == 0
    rec.apply(last)
    assert rec.complete_prefix() >= 1
