"""The text report of an accumulating run: under each rank's rows, one line per micro-batch
with its rows, its loss and whether DDP's comm hook all-reduced in its backward."""

from __future__ import annotations

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.report import rows_label, run_report
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
    assert not any(isinstance(e, protocol.MicroStep) for e in rec.events)
