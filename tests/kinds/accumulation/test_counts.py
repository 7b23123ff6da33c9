"""The all-reduce count a prediction asks for, against the raw micro-step lines (pure): every
step and rank, mid-stream (nothing before a rank's step is in) and outside the run."""

from __future__ import annotations

import json

import pytest

from ddp_viz.kinds.accumulation.counts import allreduces, allreduces_quantity, synced_backwards
from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.model.quiz import Quantity
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import DATA, load_recording

NAMES = ["accumulate-mlp-buckets.jsonl", "accumulate-4-ranks.jsonl", "accumulate-3-micro.jsonl"]


def _micro(allreduced: list[int]) -> MicroStep:
    return MicroStep(run=1, step=0, rank=0, micro=0, loss=1.0, grads={}, allreduced=allreduced)


def test_counts_of_a_steps_micro_batches() -> None:
    micro = [_micro([]), _micro([0, 1, 2]), _micro([]), _micro([1])]
    assert allreduces(micro) == 4  # every bucket call
    assert synced_backwards(micro) == 2  # backward passes that called the hook at all
    assert allreduces([_micro([])]) == 0 and synced_backwards([_micro([])]) == 0
    assert allreduces([]) is None and synced_backwards([]) is None


@pytest.mark.parametrize("name", NAMES)
def test_the_quantity_is_the_hooks_calls_once_the_ranks_step_is_in(name) -> None:
    lines = [json.loads(line) for line in (DATA / name).read_text().splitlines() if line]
    events = load_recording(name)
    calls: dict[tuple[int, int], int] = {}
    rec = RunRecord()
    checked = 0
    for line, event in zip(lines, events, strict=True):
        rec.apply(event)
        if line["event"] == "micro_step":
            key = (line["step"], line["rank"])
            calls[key] = calls.get(key, 0) + len(line["allreduced"])
        # a rank's step is in once its local_grad (with its loss) has arrived
        arrived = {
            (d["step"], d["rank"])
            for d in lines[: lines.index(line) + 1]
            if d["event"] == "local_grad"
        }
        for step, rank in calls:
            q = Quantity(what="allreduces", step=step + 1, rank=rank)
            want = float(calls[(step, rank)]) if (step, rank) in arrived else None
            assert allreduces_quantity(rec, q) == want, (step, rank)
            checked += 1
    assert checked > 20
    full = record(events)
    assert allreduces_quantity(full, Quantity(what="allreduces", step=0)) is None
    last = max(s for s, _ in calls) + 1
    assert allreduces_quantity(full, Quantity(what="allreduces", step=last + 1)) is None
    assert allreduces_quantity(full, Quantity(what="allreduces", step=1, rank=9)) is None


def test_the_counts_differ_between_steps_in_a_recording_checked() -> None:
    # every rank makes the same all-reduces (they are collective), so a slip of rank shows only
    # mid-stream, above; a slip of step shows here, where step 1 has one call and step 2 two
    lines = [json.loads(x) for x in (DATA / NAMES[0]).read_text().splitlines() if x]
    per: dict[tuple[int, int], int] = {}
    for d in lines:
        if d["event"] == "micro_step":
            per[(d["step"], d["rank"])] = per.get((d["step"], d["rank"]), 0) + len(d["allreduced"])
    assert {s: n for (s, _), n in per.items()} == {0: 1, 1: 2}


def test_a_run_without_accumulation_has_no_count() -> None:
    rec = record(load_recording("four-ranks-3-steps.jsonl"))
    assert allreduces_quantity(rec, Quantity(what="allreduces", step=1, rank=0)) is None
