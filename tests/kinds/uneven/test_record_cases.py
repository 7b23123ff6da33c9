"""The uneven record's answers the core and the quiz read, asked mid-stream as well as at the
end: which ranks train a step once one ran out of batches, and the rank monitored_barrier
named (only once the run is over; none when no error named one)."""

from __future__ import annotations

import json

from ddp_viz.kinds.uneven.record import missing_rank, step_ranks
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording

BARRIER = "uneven-monitored-barrier.jsonl"


def _raw(name: str, kind: str) -> list[dict]:
    lines = [json.loads(x) for x in (DATA / name).read_text().splitlines() if x.strip()]
    return [d for d in lines if d["event"] == kind]


def test_a_rank_that_ran_out_is_not_waited_for_and_one_that_did_not_always_is() -> None:
    (out,) = _raw(BARRIER, "out_of_data")
    assert (out["rank"], out["steps"]) == (0, 3)  # rank 0 trained 3 steps; rank 1 never ran out
    rec = record(load_recording(BARRIER))
    assert rec.world_size == 2
    assert [step_ranks(rec, n) for n in (0, 2, 3, 4)] == [[0, 1], [0, 1], [1], [1]]


def test_the_named_rank_is_answered_only_once_the_run_is_over() -> None:
    events = load_recording(BARRIER)
    end = next(i for i, e in enumerate(events) if e.kind == "run_finished")
    named = [d for d in _raw(BARRIER, "stalled") if "failed to pass monitoredBarrier" in d["error"]]
    assert [d["error"].split("Rank ")[2].split()[0] for d in named] == ["1"]
    before = record(events[:end])
    assert before.parts["uneven"].stalled and missing_rank(before, None) is None  # type: ignore[arg-type]
    assert missing_rank(record(events), None) == 1.0  # type: ignore[arg-type]


def test_a_run_whose_errors_name_no_rank_has_no_answer() -> None:
    name = "uneven-stall.jsonl"
    assert not any("monitoredBarrier" in d["error"] for d in _raw(name, "stalled"))
    rec = record(load_recording(name))
    assert rec.done and missing_rank(rec, None) is None  # type: ignore[arg-type]
