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


def test_the_status_bar_says_why_a_run_takes_a_while() -> None:
    """Issue 47, 5: the default run (200 steps, 2 ranks) took ~100 s with nothing said."""
    from ddp_viz.model.scenario import default_scenario
    from tests.core.test_session import make, ready

    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    events = load_recording("comm-hooks-14-steps.jsonl")
    start = next(i for i, e in enumerate(events) if e.kind == "run_started")
    for e in events[: start + 1]:
        s.on_transport_event(e)
    rec = s.record
    hooks = len([k for k in rec.scenario["hook_compression"]["ranks"]]) * 2 + 2
    steps = rec.scenario["hook_compression"]["steps"]
    assert f"{hooks} ways" in v.status and f"{steps} steps" in v.status, v.status
    assert f"({steps * hooks} rounds over gloo)" in v.status
    for e in events[start + 1 :]:
        s.on_transport_event(e)
    assert "ways in lockstep" not in v.status  # the run is over: it no longer says so
