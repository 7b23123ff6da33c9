"""Folding recorded events into steps and walking the stage's phases (pure)."""

from __future__ import annotations

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.report import run_report
from ddp_viz.model.timeline import (
    PHASES,
    Cursor,
    RunRecord,
    RunStatus,
    grads_close,
    record,
    scalar,
    walk,
)
from tests.conftest import assert_lesson_numbers, load_recording


def test_default_run_numbers(default_events) -> None:
    rec = record(default_events)
    assert (
        rec.status is RunStatus.FINISHED and rec.world_size == 2 and rec.shards == [[0, 1], [2, 3]]
    )
    (st,) = rec.steps
    assert st.complete(2)
    assert_lesson_numbers(st)
    assert st.ranks_agree() and st.averaged_agree() and st.average_is_full_batch()
    assert st.mean_of_locals() == {"weight": [-27.5], "bias": [-9.5]}
    assert rec.params_before(1) == st.params_after()


def test_uneven_shards_are_flagged_with_the_reason() -> None:
    rec = record(load_recording("uneven-3-ranks.jsonl"))
    st = rec.steps[0]
    assert st.reference is not None and st.reference.shard_sizes == [2, 1, 1]
    assert st.ranks_agree() is True
    assert st.average_is_full_batch() is False
    assert grads_close(st.averaged(), st.reference.manual_average)
    text = run_report(rec)
    assert "✗ average ≠ full batch" in text and "shards hold 2, 1, 1 rows" in text


def test_events_of_other_runs_are_ignored(default_events) -> None:
    rec = record(default_events)
    stray = protocol.Params(run=99, step=0, rank=0, params={"weight": [1.0], "bias": [1.0]})
    assert rec.apply(stray) is False
    assert scalar(rec.steps[0].ranks[0].params, "weight") == pytest.approx(0.775, abs=1e-6)


def test_a_tampered_rank_breaks_the_agreement_check(default_events) -> None:
    rec = record(default_events)
    rec.apply(protocol.Params(run=1, step=0, rank=1, params={"weight": [0.8], "bias": [0.095]}))
    assert rec.steps[0].ranks_agree() is False


def test_failure_is_recorded(default_events) -> None:
    rec = RunRecord()
    for e in default_events[:8]:
        rec.apply(e)
    rec.apply(protocol.RunFailed(run=1, reason="rank 1 was killed by SIGKILL", rank=1))
    assert rec.status is RunStatus.FAILED and rec.failed_rank == 1 and "SIGKILL" in rec.reason


def test_cursor_walks_every_phase_forward_and_back() -> None:
    cursors = list(walk(2))
    assert len(cursors) == 2 * len(PHASES)
    assert [c.phase_name for c in cursors[:4]] == ["shards", "local", "allreduce", "step"]
    assert cursors[-1] == Cursor(1, 3)
    back = cursors[-1]
    for expected in reversed(cursors[:-1]):
        back = back.prev()
        assert back == expected
    assert Cursor().prev() == Cursor()
    assert cursors[-1].next(2) == cursors[-1]


@pytest.mark.parametrize(
    ("error", "same"), [(0.0, True), (2e-6, True), (1e-3, False), (0.05, False)]
)
def test_average_is_full_batch_only_within_float_rounding(default_events, error, same) -> None:
    """Relative 1e-5 is float32 rounding; anything visibly off is flagged."""
    rec = record(default_events)
    st = rec.steps[0]
    for r in st.ranks:
        off = {n: [v * (1 + error) for v in vals] for n, vals in st.ranks[r].averaged.items()}
        rec.apply(protocol.AveragedGrad(run=rec.run, step=0, rank=r, grads=off))
    assert st.average_is_full_batch() is same


def test_report_counts_steps_and_rows_from_one(default_events) -> None:
    text = run_report(record(default_events))
    assert "step 1\n" in text and "step 0" not in text
    rows = [line.split()[:2] for line in text.splitlines() if line.strip().startswith(("0 ", "1 "))]
    assert rows == [["0", "1–2"], ["1", "3–4"]]


def test_an_mlp_run_reports_every_parameter_by_name() -> None:
    rec = record(load_recording("mlp-2-ranks-3-steps.jsonl"))
    assert [p.name for p in rec.params] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert rec.initial_agree() is True
    text = run_report(rec)
    for label in ("‖0.weight‖", "‖0.bias‖", "‖2.weight‖", "2.bias"):
        assert label in text
    assert "weight " not in text.replace("0.weight", "").replace("2.weight", "")


def test_a_run_is_judged_on_the_steps_the_reference_checked() -> None:
    """The reference runs at some steps only: a step without one is not a failed check (a
    25-step run once read '✗ average = full batch at every step')."""
    from dataclasses import replace as copy_with

    from ddp_viz.model import protocol
    from tests.conftest import load_recording

    events = load_recording("four-ranks-3-steps.jsonl")
    rec = record(events)
    assert rec.check_summary()["average_is_full_batch"] is True
    late = [e for e in events if not (isinstance(e, protocol.Reference) and e.step > 0)]
    assert record(late).check_summary()["average_is_full_batch"] is True
    none = [e for e in events if not isinstance(e, protocol.Reference)]
    assert record(none).check_summary()["average_is_full_batch"] is None
    wrong = [
        copy_with(e, full_batch_grads={k: [v[0] + 1] for k, v in e.full_batch_grads.items()})
        if isinstance(e, protocol.Reference)
        else e
        for e in events
    ]
    assert record(wrong).check_summary()["average_is_full_batch"] is False


def test_a_long_run_records_values_at_some_steps_and_the_loss_at_every_step() -> None:
    """32 steps: values for steps 1–20, 30 and the last; the others bring loss and timings."""
    rec = record(load_recording("long-run-32-steps.jsonl"))
    assert rec.status is RunStatus.FINISHED and rec.complete_prefix() == 32
    with_values = [st.step + 1 for st in rec.steps if st.has_values]
    assert with_values == [*range(1, 21), 30, 32]
    light = rec.steps[24]  # step 25
    assert light.complete(2) and all(
        rs.loss is not None and rs.spans for rs in light.ranks.values()
    )
    assert all(
        rs.local is None and rs.averaged is None and rs.params is None
        for rs in light.ranks.values()
    )
    # nothing to compare at such a step, and nothing made up: not "the initial parameters"
    assert light.ranks_agree() is None and light.average_is_full_batch() is None
    assert rec.params_before(25) == {} and rec.params_before(29) == {}
    assert rec.params_before(20) == rec.steps[19].params_after()
    assert rec.check_summary() == {"ranks_agree": True, "average_is_full_batch": True}


def test_a_light_rank_step_waits_for_its_timings_before_it_counts_as_complete() -> None:
    events = load_recording("long-run-32-steps.jsonl")
    late = next(
        e for e in events if isinstance(e, protocol.Timing) and e.step == 20 and e.rank == 1
    )
    rec = record(e for e in events if e is not late)
    assert rec.steps[20].ranks[1].loss is not None  # step 21's loss came, its timing did not
    assert rec.complete_prefix() == 20
    rec.apply(late)
    assert rec.complete_prefix() == 32


def test_the_report_shows_a_light_step_by_its_losses_and_says_why(default_events) -> None:
    text = run_report(record(load_recording("long-run-32-steps.jsonl")), max_steps=40)
    step25 = text.split("step 25\n")[1].split("\n\n")[0]
    assert "loss" in step25 and "every 10th step" in step25 and "averaged" not in step25
    assert "ranks agree at every step with values" in text
