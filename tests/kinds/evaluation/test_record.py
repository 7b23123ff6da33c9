"""What the evaluation kind folds, against the raw lines of its real recordings, read here
without the code under test, and asked after every event as well as at the end (pure)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from ddp_viz.kinds.evaluation import record as er
from ddp_viz.model.quiz import Quantity
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import DATA, load_recording

NAMES = ["evaluation-4-ranks.jsonl", "evaluation-2-ranks.jsonl"]


def _lines(name: str) -> list[dict]:
    return [json.loads(x) for x in (DATA / name).read_text().splitlines() if x]


@pytest.mark.parametrize("name", NAMES)
def test_counts_and_quantities_as_the_events_arrive(name) -> None:
    lines, events = _lines(name), load_recording(name)
    world = next(d["world_size"] for d in lines if d["event"] == "run_started")
    rec = RunRecord()
    for n, event in enumerate(events):
        rec.apply(event)
        if rec.run is None:
            continue
        seen = lines[: n + 1]
        shares = {d["rank"]: d for d in seen if d["event"] == "eval_share"}
        numbers = {d["rank"] for d in seen if d["event"] == "eval_numbers"}
        has_ref = any(d["event"] == "eval_reference" for d in seen)
        done = len(shares) == world and len(numbers) == world and has_ref
        assert er.complete_steps(rec) == (1 if done else 0), n
        got = er.extra_rows_quantity(rec, Quantity(what="extra_rows"))
        if len(shares) < world:
            assert got is None, n
        else:
            places = [i for d in shares.values() for i in d["indices"]]
            assert got == len(places) - len(set(places)), n
        outcomes = {(d["attempt"], d["rank"]): d for d in seen if d["event"] == "eval_outcome"}
        stalled = {r for (a, r), d in outcomes.items() if a == "wrapper" and d["error"]}
        assert set(er.stalled(er.part(rec))) == stalled, n
        finished = [d for (a, _), d in outcomes.items() if a == "module" and not d["error"]]
        assert er.module_done(er.part(rec), world) == (len(finished) == world), n


def test_the_recording_stalls_some_ranks_and_finishes_the_module_on_all() -> None:
    # without both, `and` for `or` in stalled() and module_done() would pass above
    lines = _lines(NAMES[0])
    outcomes = [d for d in lines if d["event"] == "eval_outcome"]
    assert {d["attempt"] for d in outcomes if d["error"]} == {"wrapper"}
    assert sum(d["attempt"] == "module" and not d["error"] for d in outcomes) == 4


@pytest.mark.parametrize("name", NAMES)
def test_the_four_ways_are_the_ranks_numbers_and_equal_only_to_the_reference(name) -> None:
    lines = _lines(name)
    p = er.part(record(load_recording(name)))
    mine = next(d for d in lines if d["event"] == "eval_numbers" and d["rank"] == 0)
    ref = next(d for d in lines if d["event"] == "eval_reference")
    want_ref = sum(ref["correct"]) / ref["rows"]
    assert er.reference_accuracy(p) == want_ref
    want = {
        "rank0": mine["own"][0] / mine["own"][1],
        "mean": mine["mean_of_ranks"],
        "padded": mine["padded_sums"][0] / mine["padded_sums"][1],
        "kept": mine["kept_sums"][0] / mine["kept_sums"][1],
    }
    got = {w.key: w for w in er.ways(p)}
    assert {k: w.value for k, w in got.items()} == want
    for k, w in got.items():
        assert w.equal is (abs(want[k] - want_ref) <= 1e-12), k
    assert [w.equal for w in got.values()].count(True) in (1, 2, 3)  # some ways differ


def test_no_ways_before_rank_0s_numbers_or_the_reference() -> None:
    events = load_recording(NAMES[0])
    no_ref = [e for e in events if e.kind != "eval_reference"]
    assert er.ways(er.part(record(no_ref))) == []
    assert er.reference_accuracy(er.part(record(no_ref))) is None
    no_rank0 = [e for e in events if not (e.kind == "eval_numbers" and e.rank == 0)]
    assert er.ways(er.part(record(no_rank0))) == []


def test_a_ratio_of_nothing_is_not_a_number() -> None:
    assert math.isnan(er.ratio([0.0, 0.0])) and math.isnan(er.ratio([3.0, 0.0]))
    assert er.ratio([3.0, 4.0]) == 0.75


@pytest.mark.parametrize("seeding", ["same", "seed_plus_rank"])
def test_mask_agreement_is_the_share_of_places_equal_to_rank_0s(seeding) -> None:
    lines = _lines(NAMES[0])
    masks = {
        d["rank"]: d["mask"]
        for d in lines
        if d["event"] == "dropout_mask" and d["seeding"] == seeding
    }
    base = [v for row in masks[0] for v in row]
    want = {}
    for r, m in masks.items():
        flat = [v for row in m for v in row]
        want[r] = sum(a == b for a, b in zip(base, flat, strict=True)) / len(flat)
    p = er.part(record(load_recording(NAMES[0])))
    assert er.mask_agreement(p, seeding) == want
    if seeding == "seed_plus_rank":
        assert all(v < 1.0 for r, v in want.items() if r)  # each rank its own mask
    assert er.mask_agreement(p, "no such seeding") == {}


def test_an_empty_mask_agrees_and_masks_of_other_shapes_are_refused() -> None:
    p = er.part(record(load_recording(NAMES[0])))
    zero = p.masks[("same", 0)]
    p.masks[("same", 0)] = dataclasses.replace(zero, mask=[])
    p.masks[("same", 1)] = dataclasses.replace(p.masks[("same", 1)], mask=[])
    for r in (2, 3):
        del p.masks[("same", r)]
    assert er.mask_agreement(p, "same") == {0: 1.0, 1: 1.0}
    p.masks[("same", 1)] = dataclasses.replace(zero, mask=[[1, 0]])
    with pytest.raises(ValueError):
        er.mask_agreement(p, "same")


def test_the_spec_of_a_run_without_the_table_is_the_defaults() -> None:
    rec = record(load_recording(NAMES[0]))
    assert er.spec_of(rec).eval_rows == 25
    empty = dataclasses.replace(rec, scenario={})
    assert er.spec_of(empty) == er.EvalSpec()
