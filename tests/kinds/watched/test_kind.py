"""The watched kind's own answers to the window: which scenario is a watched run, where each
rank runs (as it said when it joined), and when a step counts as reported by every rank."""

from __future__ import annotations

import json
from dataclasses import replace

from ddp_viz.kinds.watched.kind import claims, hosts, step_reported
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording

UNEVEN = "watched-uneven-3-ranks.jsonl"  # rank 0 runs 6 steps, ranks 1 and 2 run 7


def test_only_a_scenario_that_says_watched_is_claimed() -> None:
    assert claims({"watched": True}) is True
    assert claims({"watched": False}) is False
    assert claims({}) is False
    assert claims({"ddp": {"watched": True}}) is False


def test_each_ranks_host_is_the_one_it_named_when_it_joined() -> None:
    names = {0: "node-a", 1: "node-b", 2: "node-c"}
    events = [
        replace(e, host=names[e.rank]) if e.kind == "watched_rank" else e
        for e in load_recording(UNEVEN)
    ]
    assert hosts(record(events)) == names
    lines = (DATA / UNEVEN).read_text().splitlines()
    joined = [json.loads(ln) for ln in lines if '"watched_rank"' in ln]
    assert hosts(record(load_recording(UNEVEN))) == {d["rank"]: d["host"] for d in joined}


def test_a_step_is_reported_when_every_rank_sent_its_timings() -> None:
    lines = (DATA / UNEVEN).read_text().splitlines()
    timed = {(d["step"], d["rank"]) for d in map(json.loads, lines) if d["event"] == "timing"}
    rec = record(load_recording(UNEVEN))
    for st in rec.steps:
        assert step_reported(rec, st) is all((st.step, r) in timed for r in range(3)), st.step
    assert [step_reported(rec, st) for st in rec.steps] == [True] * 6 + [False]
