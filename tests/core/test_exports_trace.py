"""The Chrome trace export, event by event, against a trace built in the test from a
recording's raw lines: the process and its rows, every phase span named (a DDP bucket by its
index, with its bytes and parameters), in microseconds from the run's first instant, every
gradient's ready tick, a kind's own spans (the ring's sends), and the JSON written out."""

from __future__ import annotations

import json
import math

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.exports import chrome_trace, chrome_trace_json, events_jsonl, traceable
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import DATA

PHASES = ("forward", "backward", "allreduce", "step")
NAMES = {
    "forward": "forward",
    "backward": "loss.backward()",
    "allreduce": "all-reduce (DDP hook)",
    "step": "optimizer.step()",
}


def raw(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def rec_of(name: str):
    return record(protocol.decode(line) for line in (DATA / name).read_text().splitlines())


def meta(lines: list[dict]) -> list[dict]:
    world = next(e for e in lines if e["event"] == "run_started")["world_size"]
    pids = {e["rank"]: e["pid"] for e in lines if e["event"] == "rank_started"}
    out = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "DDP run 1"}}]
    for r in range(world):
        out.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": 1,
                "tid": r,
                "args": {"name": f"rank {r} (pid {pids[r]})"},
            }
        )
        out.append(
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": 1,
                "tid": r,
                "args": {"sort_index": r},
            }
        )
    return out


def expected_trace(lines: list[dict]) -> dict:
    timings = [e for e in lines if e["event"] == "timing"]
    t0 = min(s[0] for e in timings for spans in e["spans"].values() for s in spans)

    def us(t: float) -> float:
        return round((t - t0) * 1e6, 3)

    spans = []
    for e in timings:
        launched = {b["launched"]: b for b in e.get("buckets", [])}
        for phase in PHASES:
            for start, end in e["spans"].get(phase, []):
                args = {"step": e["step"] + 1, "rank": e["rank"]}
                name = NAMES[phase]
                b = launched.get(start) if phase == "allreduce" else None
                if b is not None:
                    name = f"bucket {b['index']} all-reduce"
                    args |= {"bucket": b["index"], "bytes": b["bytes"], "params": b["params"]}
                spans.append(
                    (
                        (e["rank"], start, phase),
                        {
                            "name": name,
                            "cat": phase,
                            "ph": "X",
                            "pid": 1,
                            "tid": e["rank"],
                            "ts": us(start),
                            "dur": round(max(0.0, end - start) * 1e6, 3),
                            "args": args,
                        },
                    )
                )
    ticks = [
        {
            "name": f"{param} grad ready",
            "cat": "ready",
            "ph": "i",
            "s": "t",
            "pid": 1,
            "tid": e["rank"],
            "ts": us(t),
            "args": {"step": e["step"] + 1, "rank": e["rank"], "param": param},
        }
        for e in timings
        for param, t in e.get("ready", [])
    ]
    return {"spans": [s for _, s in sorted(spans, key=lambda x: x[0])], "ticks": ticks}


def _tick_order(e: dict) -> tuple:
    return (e["tid"], e["ts"], e["name"])


@pytest.mark.parametrize(
    "name",
    ["mlp-buckets-2-ranks.jsonl", "four-ranks-3-steps.jsonl", "buckets-lesson-4-ranks.jsonl"],
)
def test_every_trace_event_is_the_recorded_timing_in_microseconds(name: str) -> None:
    lines = raw(name)
    want = expected_trace(lines)
    rec = rec_of(name)
    trace = chrome_trace(rec)
    events = trace["traceEvents"]
    n_meta = 1 + 2 * rec.world_size
    assert events[:n_meta] == meta(lines)
    spans = [e for e in events if e["ph"] == "X"]
    assert spans == want["spans"]
    assert events[n_meta : n_meta + len(spans)] == spans  # the spans first, by rank then time
    ticks = [e for e in events if e["ph"] == "i"]
    assert sorted(ticks, key=_tick_order) == sorted(want["ticks"], key=_tick_order)
    assert len(events) == n_meta + len(spans) + len(ticks)
    assert min(e["ts"] for e in spans) == 0.0
    started = next(e for e in lines if e["event"] == "run_started")
    assert trace["displayTimeUnit"] == "ms"
    assert trace["otherData"] == {
        "source": "ddp-viz",
        "world_size": started["world_size"],
        "scenario": started["scenario"],
        "status": rec.status,
    }
    assert str(trace["otherData"]["status"]) == str(rec.status)


def test_an_allreduce_no_bucket_launched_is_named_for_the_ddp_hook() -> None:
    rec = rec_of("default-run.jsonl")
    names = {e["name"] for e in chrome_trace(rec)["traceEvents"] if e.get("cat") == "allreduce"}
    assert names == {"all-reduce (DDP hook)"}


def test_a_rank_without_a_pid_is_named_by_its_rank_alone_and_run_0_is_process_0() -> None:
    rec = rec_of("default-run.jsonl")
    rec.pids.pop(1)
    rec.run = None
    events = chrome_trace(rec)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names[1] == "rank 1"
    assert names[0].startswith("rank 0 (pid ")
    assert events[0] == {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "DDP run 0"}}
    assert {e["pid"] for e in events} == {0}


def test_a_span_still_open_is_left_out_and_a_backwards_one_lasts_nothing() -> None:
    rec = rec_of("default-run.jsonl")
    rs = rec.steps[0].ranks[0]
    start = rs.spans["step"][0][0]
    rs.spans["step"] = [[start, math.inf]]
    fwd_start, fwd_end = rs.spans["forward"][0]
    rs.spans["forward"] = [[fwd_end, fwd_start]]
    spans = [e for e in chrome_trace(rec)["traceEvents"] if e["ph"] == "X"]
    mine = {e["cat"]: e for e in spans if e["tid"] == 0 and e["args"]["step"] == 1}
    assert set(mine) == {"forward", "backward", "allreduce"}
    assert mine["forward"]["dur"] == 0.0
    # the first instant is still the earliest finite start of every span
    t0 = min(
        s[0] for st in rec.steps for r in st.ranks.values() for p in r.spans.values() for s in p
    )
    assert mine["forward"]["ts"] == round((fwd_end - t0) * 1e6, 3)


def test_a_ring_runs_sends_are_spans_on_the_first_sends_clock() -> None:
    lines = raw("ring-2-ranks.jsonl")
    rec = rec_of("ring-2-ranks.jsonl")
    moves = [e for e in lines if e["event"] in ("ring_step", "naive_step")]
    t0 = min(e["started"] for e in moves)
    spans = [e for e in chrome_trace(rec)["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == len(moves)
    by = {(e["cat"], e["tid"], e["ts"]): e for e in spans}
    for m in moves:
        cat = "ring" if m["event"] == "ring_step" else "naive"
        e = by[(cat, m["rank"], round((m["started"] - t0) * 1e6, 3))]
        assert e["pid"] == 1
        assert e["dur"] == round(max(0.0, m["finished"] - m["started"]) * 1e6, 3)
        if cat == "ring":
            assert e["name"] == f"ring {m['step'] + 1}: chunk {m['sent']} → rank {m['to']}"
            assert e["args"] == {
                "phase": m["phase"],
                "received": m["received"],
                "bytes": m["bytes_sent"],
            }
        else:
            assert e["args"] == {"sent": m["bytes_sent"], "received": m["bytes_received"]}
    assert min(e["ts"] for e in spans) == 0.0
    assert traceable(rec)


def test_the_trace_file_is_strict_json_indented_by_one() -> None:
    rec = rec_of("default-run.jsonl")
    rec.scenario = {**rec.scenario, "lr": math.nan, "big": math.inf}
    text = chrome_trace_json(rec)
    assert text.startswith('{\n "traceEvents": [\n  {\n   "ph": "M"')
    back = json.loads(text)
    assert back["otherData"]["scenario"]["lr"] == "NaN"
    assert back["otherData"]["scenario"]["big"] == "Infinity"
    assert "NaN," not in text and "Infinity," not in text.replace('"Infinity",', "")


def test_the_events_export_is_the_header_and_every_event_one_line_each() -> None:
    rec = rec_of("default-run.jsonl")
    text = events_jsonl(rec, "watched")
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == len(rec.events) + 2
    head = json.loads(lines[0])
    assert head["event"] == "recording" and head["lesson"] == "watched"
    assert [protocol.decode(line) for line in lines[1:-1]] == rec.events


def test_spans_starting_together_are_ordered_by_phase_and_only_an_allreduce_is_a_bucket() -> None:
    rec = rec_of("mlp-buckets-2-ranks.jsonl")
    rs = rec.steps[0].ranks[0]
    start = rs.spans["forward"][0][0]
    old = rs.spans["allreduce"][0][0]
    bucket = next(b for b in rs.bucket_spans if b["launched"] == old)
    bucket["launched"] = start  # the first bucket launched as the forward began
    rs.spans["allreduce"][0] = [start, rs.spans["allreduce"][0][1]]
    spans = [e for e in chrome_trace(rec)["traceEvents"] if e["ph"] == "X"]
    step1 = [e for e in spans if e["tid"] == 0 and e["args"]["step"] == 1]
    mine = [e for e in step1 if e["ts"] == min(x["ts"] for x in step1)]
    assert [e["cat"] for e in mine] == ["allreduce", "forward"]  # by phase name at one instant
    assert [e["name"] for e in mine] == [f"bucket {bucket['index']} all-reduce", "forward"]
    assert "bucket" not in mine[1]["args"]


def test_times_are_kept_to_the_nanosecond() -> None:
    rec = rec_of("default-run.jsonl")
    spans = rec.steps[0].ranks[0].spans
    t0 = min(
        s[0] for st in rec.steps for r in st.ranks.values() for p in r.spans.values() for s in p
    )
    spans["step"] = [[t0 + 1.2345678e-6, t0 + 3.4567891e-6]]
    step = next(
        e
        for e in chrome_trace(rec)["traceEvents"]
        if e["ph"] == "X" and e["cat"] == "step" and e["tid"] == 0 and e["args"]["step"] == 1
    )
    assert step["ts"] == 1.235 and step["dur"] == 2.222


def test_a_run_without_timings_says_so_in_so_many_words() -> None:
    with pytest.raises(ValueError) as caught:
        chrome_trace(RunRecord())
    assert str(caught.value) == "the run has no timing events to trace"
