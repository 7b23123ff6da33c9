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


def _hook_steps(name: str) -> dict[tuple[str, int, int], dict]:
    import json

    from tests.conftest import DATA

    lines = [json.loads(x) for x in (DATA / name).read_text().splitlines() if x]
    return {(d["variant"], d["step"], d["rank"]): d for d in lines if d["event"] == "hook_step"}


def test_each_variant_s_row_is_computed_from_the_raw_hook_steps() -> None:
    """Bytes and error: rank 0's in the last step; loss: the mean over the ranks, averaged over
    the last tenth of the steps (at least one); residual: rank 0's largest in any step."""
    from ddp_viz.kinds.hook_compression.report import summary_rows

    name = "comm-hooks-14-steps.jsonl"
    raw = _hook_steps(name)
    rows = summary_rows(record(load_recording(name)))
    variants = list(dict.fromkeys(v for v, _, _ in raw))
    steps = 1 + max(s for _, s, _ in raw)
    assert steps == 14 and len(rows) == len(variants) == 6
    tail = [13]  # 14 // 10 = 1 step
    for (label, sent, error, loss, residual), v in zip(rows, variants, strict=True):
        last = raw[(v, steps - 1, 0)]
        assert sent == sum(last["sent"]), label
        assert error == last["errors"]["hidden.weight"], label
        means = [(raw[(v, s, 0)]["loss"] + raw[(v, s, 1)]["loss"]) / 2 for s in tail]
        assert loss == sum(means) / len(means), label
        assert residual == max(raw[(v, s, 0)]["residual"] for s in range(steps)), label
    # the figures read differ from what a slip would read: rank 1's loss, an earlier step's
    # bytes (PowerSGD's warm-up sends the full gradient), one step's residual
    ef = "powersgd-r1"
    assert raw[(ef, 13, 0)]["loss"] != raw[(ef, 13, 1)]["loss"]
    assert sum(raw[(ef, 0, 0)]["sent"]) != sum(raw[(ef, 13, 0)]["sent"])
    assert len({raw[(ef, s, 0)]["residual"] for s in range(14)}) > 3


def _cut(name: str, steps: int):
    """The recording as it stood when every variant had finished ``steps`` steps."""
    events = load_recording(name)
    start = next(i for i, e in enumerate(events) if e.kind == "run_started")
    out = events[: start + 1]
    for e in events[start + 1 :]:
        if e.kind == "hook_step" and e.step >= steps:
            continue
        if e.kind != "run_finished":
            out.append(e)
    return out


def test_before_any_step_the_rows_say_nothing_was_measured() -> None:
    import math

    from ddp_viz.kinds.hook_compression.report import summary_rows

    rows = summary_rows(record(_cut("comm-hooks-14-steps.jsonl", 0)))
    assert len(rows) == 6
    for _label, sent, error, loss, residual in rows:
        assert sent == 0 and math.isnan(error) and math.isnan(loss) and residual == 0.0


def test_the_rebuilt_buckets_are_named_from_step_2_on_and_read_from_the_last_step() -> None:
    one = run_report(record(_cut("comm-hooks-14-steps.jsonl", 1)))
    assert "after 1 steps" in one and "buckets after the rebuild" not in one
    two = run_report(record(_cut("comm-hooks-14-steps.jsonl", 2)))
    raw = _hook_steps("comm-hooks-14-steps.jsonl")[("allreduce", 1, 0)]["names"]
    want = "; ".join(f"b{i}: {', '.join(names)}" for i, names in enumerate(raw))
    assert f"buckets after the rebuild: {want}" in two.splitlines()
    first = _hook_steps("comm-hooks-14-steps.jsonl")[("allreduce", 0, 0)]["names"]
    assert first != raw  # step 1 ran on DDP's first guess: reading it would show
