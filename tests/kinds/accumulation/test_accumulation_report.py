"""The text report of an accumulating run: under each rank's rows, one line per micro-batch
with its rows, its loss and whether DDP's comm hook all-reduced in its backward."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.kinds.accumulation.record import micro_of
from ddp_viz.model.report import rows_label, run_report
from ddp_viz.model.sharing import step_rows
from ddp_viz.model.timeline import record
from tests.conftest import load_recording


@pytest.mark.parametrize("name", ["accumulate-3-micro.jsonl", "accumulate-mlp-buckets.jsonl"])
def test_the_report_lists_every_micro_batch_under_its_rank(name: str) -> None:
    events = load_recording(name)
    rec = record(events)
    micro = [e for e in events if e.kind == "micro_step"]
    shown = [st.step for st in rec.steps]  # every step: these runs are short
    assert len(shown) <= 20 and micro
    text = run_report(rec)
    lines = [line.strip() for line in text.splitlines() if "micro-batch" in line]
    assert len(lines) == len(micro)
    for m in micro:
        n = len(m.allreduced)
        synced = "no all-reduce" if not n else "all-reduced" + (f" ({n} buckets)" if n > 1 else "")
        head = f"micro-batch {m.micro + 1}: rows {rows_label(m.rows)}, loss "
        assert any(line.startswith(head) and line.endswith(synced) for line in lines), m


def test_a_run_without_accumulation_has_no_micro_batch_lines() -> None:
    rec = record(load_recording("default-run.jsonl"))
    assert rec.steps and "micro-batch" not in run_report(rec)
    assert not any(isinstance(e, MicroStep) for e in rec.events)


def test_a_steps_rows_come_from_its_micro_batches_which_may_span_two_epochs() -> None:
    """The core's rows of a step ask the kind (``rows_of_step``): at 4 ranks a step's micro-
    batches run past the end of an epoch, so its rows belong to two epochs, which the rank's
    own report (one epoch a step) cannot say."""
    rec = record(load_recording("accumulate-4-ranks.jsonl"))
    spanning = 0
    for st in rec.steps:
        rows = step_rows(rec, st)
        micro = [
            (m.epoch, row)
            for r in sorted(st.ranks)
            for m in micro_of(rec, st.step, r)
            for row in m.rows
        ]
        assert rows == micro, st.step
        spanning += len({e for e, _ in rows}) > 1
    assert spanning  # the case the hook is for
