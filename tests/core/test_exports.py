"""Exports of a recorded run: events as JSON lines and the Chrome trace (pure)."""

from __future__ import annotations

import json

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.exports import TRACE_PHASES, chrome_trace, chrome_trace_json, events_jsonl
from ddp_viz.model.recording_format import header
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import load_recording


def check_trace(trace: dict, rec: RunRecord) -> None:
    """One track per rank; per rank and step the four phases in order on one clock."""
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert sorted(names) == list(range(rec.world_size))
    assert all(names[r].startswith(f"rank {r} (pid {rec.pids[r]})") for r in names)
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["cat"] for e in spans} == set(TRACE_PHASES)
    for r in range(rec.world_size):
        for s in range(len(rec.complete_steps())):
            # steps count from 1 in the trace, as on the stage and in the CLI
            mine = {e["cat"]: e for e in spans if e["tid"] == r and e["args"]["step"] == s + 1}
            assert set(mine) == set(TRACE_PHASES), (r, s)
            fwd, bwd, ar, opt = (mine[p] for p in TRACE_PHASES)
            assert fwd["ts"] <= bwd["ts"] <= ar["ts"]
            assert ar["ts"] + ar["dur"] <= bwd["ts"] + bwd["dur"] + 1  # inside backward
            assert bwd["ts"] + bwd["dur"] <= opt["ts"] + 1
    assert min(e["ts"] for e in spans) == 0


@pytest.mark.parametrize("name", ["default-run.jsonl", "four-ranks-3-steps.jsonl"])
def test_chrome_trace_has_a_track_per_rank_and_ordered_phases(name: str) -> None:
    rec = record(load_recording(name))
    trace = json.loads(chrome_trace_json(rec))
    check_trace(trace, rec)
    assert trace["otherData"]["world_size"] == rec.world_size


def test_events_jsonl_is_the_header_then_the_stream_again(default_events) -> None:
    rec = record(default_events)
    lines = events_jsonl(rec, "ddp-pattern").splitlines()
    again = [protocol.decode(line) for line in lines]
    assert again[0] == header("ddp-pattern")
    assert again[1:] == rec.events
    assert isinstance(again[-1], protocol.RunFinished)


def test_a_run_without_timings_cannot_be_traced() -> None:
    with pytest.raises(ValueError, match="no timing"):
        chrome_trace(RunRecord())


def test_the_trace_shows_ready_ticks_and_named_buckets_inside_backward() -> None:
    rec = record(load_recording("mlp-buckets-2-ranks.jsonl"))
    trace = chrome_trace(rec)
    events = trace["traceEvents"]
    ticks = [e for e in events if e.get("cat") == "ready"]
    assert len(ticks) == rec.world_size * len(rec.steps) * len(rec.params)
    assert all(e["ph"] == "i" and e["name"].endswith("grad ready") for e in ticks)
    buckets = [e for e in events if e.get("cat") == "allreduce"]
    assert {e["name"] for e in buckets} >= {"bucket 0 all-reduce", "bucket 2 all-reduce"}
    backward = {(e["tid"], e["args"]["step"]): e for e in events if e.get("cat") == "backward"}
    for e in buckets + ticks:
        b = backward[(e["tid"], e["args"]["step"])]
        assert b["ts"] - 1 <= e["ts"] <= b["ts"] + b["dur"] + 1000  # within backward (µs)


def test_a_trace_is_offered_only_for_a_run_with_timings() -> None:
    from ddp_viz.model.exports import traceable

    assert traceable(record(load_recording("buckets-lesson-2-ranks.jsonl")))
    assert not traceable(record(load_recording("comm-hooks-14-steps.jsonl")))
    assert not traceable(RunRecord())


def test_the_buckets_trace_counts_steps_from_one() -> None:
    """Issue 47, 10: the trace said "step": 0 for what the stage calls step 1."""
    rec = record(load_recording("buckets-lesson-2-ranks.jsonl"))
    events = chrome_trace(rec)["traceEvents"]
    steps = {e["args"]["step"] for e in events if e.get("ph") in ("X", "i")}
    assert steps == set(range(1, len(rec.steps) + 1))
