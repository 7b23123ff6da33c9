"""Why the accumulation kind says DDP's average is not one process's gradient on the step's
rows: each reason in its words, only when it applies (pure: recorded events and copies of them
with one setting or one micro-batch changed)."""

from __future__ import annotations

import dataclasses

from ddp_viz.kinds.accumulation.reasons import differs
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import load_recording

UNSCALED = (
    "each rank added up {k} micro-batches' gradients in .grad without dividing the loss by {k}, "
    "so the step's gradient is {k}× what one process gets from these rows"
)
SHORT = (
    "the micro-batches hold {held} rows (the loader's last batch of an epoch is short), and "
    "each micro-batch's mean counts the same, so a row in a short one weighs more"
)


def _with_train(name: str, **train) -> RunRecord:
    events = []
    for e in load_recording(name):
        if e.kind == "run_started":
            scenario = {**e.scenario, "train": {**e.scenario["train"], **train}}
            e = dataclasses.replace(e, scenario=scenario)
        events.append(e)
    return record(events)


def _short_step(rec: RunRecord) -> list[int]:
    """The steps whose micro-batches (any rank's) differ in size, read from the events."""
    sizes: dict[int, set[int]] = {}
    for e in rec.events:
        if e.kind == "micro_step":
            sizes.setdefault(e.step, set()).add(len(e.rows))
    return sorted(s for s, n in sizes.items() if len(n) > 1)


def test_a_loss_not_divided_by_k_is_named_with_k() -> None:
    rec = record(load_recording("accumulate-unscaled.jsonl"))
    for st in rec.complete_steps():
        assert differs(rec, st) == [UNSCALED.format(k=3)]
    two = _with_train("accumulate-unscaled.jsonl", accumulate=2)
    assert differs(two, two.complete_steps()[0]) == [UNSCALED.format(k=2)]


def test_no_reason_for_a_scaled_loss_or_one_micro_batch() -> None:
    scaled = _with_train("accumulate-unscaled.jsonl", scale_loss=True)
    assert all(differs(scaled, st) == [] for st in scaled.complete_steps())
    single = _with_train("accumulate-unscaled.jsonl", accumulate=1)
    assert all(differs(single, st) == [] for st in single.complete_steps())
    healthy = record(load_recording("accumulate-3-micro.jsonl"))
    assert all(differs(healthy, st) == [] for st in healthy.complete_steps())


def test_short_micro_batches_are_named_only_in_the_steps_that_have_them() -> None:
    events = []
    for e in load_recording("accumulate-4-ranks.jsonl"):
        if e.kind == "micro_step" and e.step == 1 and len(e.rows) == 1:
            e = dataclasses.replace(e, rows=[*e.rows, e.rows[0]])  # step 2: no short batch
        events.append(e)
    rec = record(events)
    assert _short_step(rec) == [0]
    steps = rec.complete_steps()
    assert [st.step for st in steps] == [0, 1]
    assert differs(rec, steps[0]) == [SHORT.format(held="1 or 2")]
    assert differs(rec, steps[1]) == []


def test_a_summed_loss_weighs_every_row_alike() -> None:
    rec = _with_train("accumulate-4-ranks.jsonl", loss_reduction="sum")
    assert all(differs(rec, st) == [] for st in rec.complete_steps())


def test_three_sizes_list_each_and_both_reasons_come_in_order() -> None:
    events = []
    for e in load_recording("accumulate-4-ranks.jsonl"):
        if e.kind == "run_started":
            e = dataclasses.replace(
                e, scenario={**e.scenario, "train": {**e.scenario["train"], "scale_loss": False}}
            )
        if e.kind == "micro_step" and (e.step, e.rank, e.micro) == (0, 3, 2):
            e = dataclasses.replace(e, rows=[0, 1, 2])
        events.append(e)
    rec = record(events)
    sizes = sorted({len(e.rows) for e in rec.events if e.kind == "micro_step" and e.step == 0})
    assert sizes == [1, 2, 3]
    assert differs(rec, rec.complete_steps()[0]) == [
        UNSCALED.format(k=3),
        SHORT.format(held="1, 2 or 3"),
    ]


def _with_table(name: str, train: dict | None) -> RunRecord:
    events = []
    for e in load_recording(name):
        if e.kind == "run_started":
            scenario = {k: v for k, v in e.scenario.items() if k != "train"}
            if train is not None:
                scenario["train"] = train
            e = dataclasses.replace(e, scenario=scenario)
        events.append(e)
    return record(events)


def test_settings_left_out_of_the_table_take_the_scenario_s_defaults() -> None:
    """accumulate 1, scale_loss true, loss_reduction mean (model/dataspec.py's defaults)."""
    for train in (None, {}, {"scale_loss": False}):  # one micro-batch: nothing to divide
        rec = _with_table("accumulate-unscaled.jsonl", train)
        assert differs(rec, rec.complete_steps()[0]) == []
    rec = _with_table("accumulate-unscaled.jsonl", {"accumulate": 3})  # scaled by default
    assert differs(rec, rec.complete_steps()[0]) == []
    rec = _with_table("accumulate-4-ranks.jsonl", {"accumulate": 3})  # a mean by default
    assert differs(rec, rec.complete_steps()[0]) == [SHORT.format(held="1 or 2")]
