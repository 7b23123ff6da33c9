"""The comm-hooks report, read from a recorded real run (tests/data/README.md)."""

from __future__ import annotations

from ddp_viz.model.report import run_report
from ddp_viz.model.timeline import record
from tests.conftest import load_recording


def test_the_report_names_the_buckets_ddp_rebuilt_not_its_first_guess() -> None:
    """Step 1 runs on DDP's first bucket guess (every parameter in one bucket, in
    registration order); it rebuilds them in the order the gradients became ready. The
    recording's last step holds the rebuilt pair, written out here from its events."""
    said = run_report(record(load_recording("comm-hooks-14-steps.jsonl")))
    assert (
        "buckets after the rebuild: b0: out.bias, out.weight, hidden.bias, hidden.weight; "
        "b1: inp.bias, inp.weight"
    ) in said.splitlines()
