"""What an accumulation run folds beside its steps (pure): each rank's micro-batches of each
step in the order they came, the rows they held by epoch, and nothing for a step, a rank or a
run without micro-batches. Expected values come from the raw ``micro_step`` lines."""

from __future__ import annotations

import json

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.kinds.accumulation.record import micro_of, rows_of_step, step_micro
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording

FOUR = "accumulate-4-ranks.jsonl"  # 4 ranks, 3 micro-batches a step, 2 steps, 2 epochs


def raw() -> dict[tuple[int, int], list[dict]]:
    lines = [json.loads(ln) for ln in (DATA / FOUR).read_text().splitlines() if ln.strip()]
    out: dict[tuple[int, int], list[dict]] = {}
    for d in lines:
        if d["event"] == "micro_step":
            out.setdefault((d["step"], d["rank"]), []).append(d)
    return out


def test_each_ranks_micro_batches_of_each_step_in_order() -> None:
    rec, want = record(load_recording(FOUR)), raw()
    assert sorted(want) == [(s, r) for s in range(2) for r in range(4)]
    for (s, r), lines in want.items():
        got = micro_of(rec, s, r)
        assert [(m.step, m.rank, m.micro, m.rows) for m in got] == [
            (d["step"], d["rank"], d["micro"], d["rows"]) for d in lines
        ]
        rows = rows_of_step(rec, rec.steps[s], r)
        assert rows == [(d.get("epoch", 0), row) for d in lines for row in d["rows"]]
    for s in range(2):
        by_rank = step_micro(rec, rec.steps[s])
        assert list(by_rank) == [0, 1, 2, 3]
        assert all(by_rank[r] == micro_of(rec, s, r) for r in range(4))
    # a step's rows may come from two epochs
    assert len({e for r in range(4) for e, _ in rows_of_step(rec, rec.steps[0], r)}) == 2


def test_no_micro_batches_means_none_not_an_empty_list_of_rows() -> None:
    events = [e for e in load_recording(FOUR) if not (isinstance(e, MicroStep) and e.rank == 3)]
    rec = record(events)
    assert micro_of(rec, 0, 3) == [] and micro_of(rec, 9, 0) == []
    assert rows_of_step(rec, rec.steps[0], 3) is None  # the core's rows, then
    assert rows_of_step(rec, rec.steps[0], 0) is not None
    assert step_micro(rec, rec.steps[1])[3] == []
    plain = record(load_recording("default-run.jsonl"))  # a run without accumulation
    assert micro_of(plain, 0, 0) == []
    assert rows_of_step(plain, plain.steps[0], 0) is None
