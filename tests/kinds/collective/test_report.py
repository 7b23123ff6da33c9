"""The all-reduce run's report, status line and trace spans, against the raw events of a
recorded run and of copies changed where the code branches."""

from __future__ import annotations

import dataclasses
import json

from ddp_viz.kinds.collective.report import collective_report, trace_spans
from ddp_viz.model.protocol import RunFailed
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording

FOUR = "ring-4-ranks.jsonl"


def _raw(name: str, kind: str) -> list[dict]:
    lines = [json.loads(x) for x in (DATA / name).read_text().splitlines() if x.strip()]
    return [d for d in lines if d["event"] == kind]


def test_every_ring_and_naive_send_is_one_span_named_from_its_event() -> None:
    """One span per rank and step: the ring's names the step from 1, the chunk sent and the
    rank it went to; the naive's says which way its bytes went (step 0: to rank 0)."""
    spans = trace_spans(record(load_recording(FOUR)))
    ring = sorted(_raw(FOUR, "ring_step"), key=lambda d: (d["step"], d["rank"]))
    naive = sorted(_raw(FOUR, "naive_step"), key=lambda d: (d["step"], d["rank"]))
    want = [
        {
            "rank": d["rank"],
            "cat": "ring",
            "name": f"ring {d['step'] + 1}: chunk {d['sent']} → rank {d['to']}",
            "start": d["started"],
            "end": d["finished"],
            "args": {"phase": d["phase"], "received": d["received"], "bytes": d["bytes_sent"]},
        }
        for d in ring
    ] + [
        {
            "rank": d["rank"],
            "cat": "naive",
            "name": "naive: to rank 0" if d["step"] == 0 else "naive: the sum back",
            "start": d["started"],
            "end": d["finished"],
            "args": {"sent": d["bytes_sent"], "received": d["bytes_received"]},
        }
        for d in naive
    ]
    assert spans == want
    # the recording tells its steps and ranks apart: a span read from a neighbour would show
    assert len({d["sent"] for d in ring}) > 1 and len({d["bytes_sent"] for d in naive}) > 1
    assert {d["step"] for d in naive} == {0, 1} and len(ring) == 4 * 6


def test_a_run_of_another_kind_has_no_collective_spans() -> None:
    assert trace_spans(record(load_recording("comm-hooks-14-steps.jsonl"))) == []


def _changed(change, name: str = FOUR):
    out = []
    for e in load_recording(name):
        e = change(e)
        if e is not None:
            out.append(e)
    return out


def test_a_vector_of_twelve_values_is_shown_whole_and_of_thirteen_cut_after_twelve() -> None:
    """The last rank holds 12 values, shown whole; the first 13, shown as its first 12 and …"""
    twelve = [float(v) for v in range(-5, 7)]
    thirteen = [float(v) for v in range(10, 23)]

    def holds(e):
        if e.kind == "collective_input" and e.rank in (0, 3):
            return dataclasses.replace(e, values=thirteen if e.rank == 0 else twelve)
        return e

    said = collective_report(record(_changed(holds))).splitlines()
    shown = ", ".join(f"{v:g}" for v in thirteen[:12])
    assert f"rank 0 holds [{shown}, …]" in said
    assert f"rank 3 holds [{', '.join(f'{v:g}' for v in twelve)}]" in said


def test_a_rank_whose_naive_result_is_missing_still_has_its_ring_row() -> None:
    """Mid-stream: rank 3's naive result has not arrived; its ring row (and the reference)
    are there, and no verdict is said for the run."""
    events = _changed(
        lambda e: (
            None
            if (e.kind == "collective_result" and e.algo == "naive" and e.rank == 3)
            or e.kind == "run_finished"
            else e
        )
    )
    said = collective_report(record(events)).splitlines()
    ring = next(
        d for d in _raw(FOUR, "collective_result") if d["algo"] == "ring" and d["rank"] == 3
    )
    rows = [x for x in said if x.startswith("   3  ")]
    assert [x.split()[1] for x in rows] == ["ring", "all_reduce"]
    assert rows[0].split()[2] == f"{ring['bytes_sent']:,}" and rows[0].endswith("✓")
    assert not any(x.startswith("finished") for x in said)


def test_a_failed_run_ends_with_its_reason_after_everything_that_arrived() -> None:
    events = _changed(lambda e: None if e.kind == "run_finished" else e)
    events.append(RunFailed(run=1, reason="rank 2 exited with code 1 in step 4", rank=2))
    said = collective_report(record(events)).splitlines()
    assert said[-2:] == ["", "run failed: rank 2 exited with code 1 in step 4"]
    assert said[0].startswith("all-reduce run 1: 4 ranks over gloo, 10 values each")
    assert "ring: 6 steps (chunk numbers from 0)" in said


def test_a_run_that_took_no_measurable_time_says_0_s() -> None:
    events = _changed(
        lambda e: dataclasses.replace(e, elapsed_s=0.0) if e.kind == "run_finished" else e
    )
    said = collective_report(record(events)).splitlines()
    assert said[-1] == "finished in 0.000 s: ✓ naive and ring equal dist.all_reduce on every rank"


def test_a_collective_table_without_length_reports_the_length_the_run_used() -> None:
    """The spec's default (8 values), as the engine ran it, and the formulas from it."""
    from ddp_viz.kinds.collective.model import CollectiveSpec, naive_bytes_sent

    def drop_length(e):
        if e.kind != "run_started":
            return e
        table = {k: v for k, v in e.scenario["collective"].items() if k != "length"}
        return dataclasses.replace(e, scenario={**e.scenario, "collective": table})

    said = collective_report(record(_changed(drop_length)))
    assert CollectiveSpec().length == 8
    assert "4 ranks over gloo, 8 values each" in said
    assert f"   0  naive                   120 {naive_bytes_sent(8, 4, 0):>8,}  ✓" in said
