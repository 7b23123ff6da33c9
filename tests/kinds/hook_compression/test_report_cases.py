"""The comm-hooks report and status line on copies of the recorded run changed where the code
branches: more steps (a tail of two), three ranks whose losses differ (the odd one last), a run
of one or two hooks, a last rank whose figures differ from rank 0's, a loss of exactly 0, a
step without the shown layer's error. Every figure expected is computed here from the events."""

from __future__ import annotations

import dataclasses
import math

from ddp_viz.kinds.hook_compression.report import running_line, status_line, summary_rows
from ddp_viz.model.report import run_report
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

RUN = "comm-hooks-14-steps.jsonl"
LAYER = "hidden.weight"


def _with_spec(events, world: int | None = None, **spec):
    """The events with ``[hook_compression]`` (and the run's world size) changed."""
    out = []
    for e in events:
        if e.kind == "run_started":
            scenario = {
                **e.scenario,
                "hook_compression": {**e.scenario["hook_compression"], **spec},
            }
            w = world or e.world_size
            scenario["world_size"] = w
            steps = spec.get("steps", e.steps)
            e = dataclasses.replace(e, scenario=scenario, world_size=w, steps=steps)
        out.append(e)
    return out


def _steps(events):
    return [e for e in events if e.kind == "hook_step"]


def _row_line(label, sent, error, loss, residual) -> str:
    return f"{label:<22} {sent:>11,} {error:>11.2e} {loss:>16.5f} {residual:>13.4g}"


def _longer_three_ranks():
    """21 steps on 3 ranks: steps 14-20 repeat steps 7-13 with their losses scaled by a
    step's own factor, and rank 2 is rank 1 with a loss 0.25 higher. 21 // 10 = 2 tail steps
    (a slip to 21 // 11 would take one)."""
    events = load_recording(RUN)
    body = [e for e in events if e.kind != "run_finished"]
    more = [
        dataclasses.replace(e, step=e.step + 7, loss=e.loss * (1 + e.step / 50))
        for e in _steps(events)
        if e.step >= 7
    ]
    hooks = _steps(body) + more
    third = [dataclasses.replace(e, rank=2, loss=e.loss + 0.25) for e in hooks if e.rank == 1]
    rest = [e for e in body if e.kind != "hook_step"]
    return _with_spec(rest + hooks + third, world=3, steps=21)


def test_the_loss_is_the_mean_over_the_last_tenth_of_the_steps_and_over_three_ranks() -> None:
    events = _longer_three_ranks()
    raw = {(e.variant, e.step, e.rank): e for e in _steps(events)}
    rec = record(events)
    rows = summary_rows(rec)
    assert len(rows) == 6
    variants = list(dict.fromkeys(v for v, _, _ in raw))
    said = run_report(rec).splitlines()
    assert "after 21 steps, rank 0 (error of hidden.weight in the last step):" in said
    for row, v in zip(rows, variants, strict=True):
        per_step = [sum(raw[(v, s, r)].loss for r in range(3)) / 3 for s in (19, 20)]
        assert per_step[0] != per_step[1]  # the two tail steps differ: a product would show
        loss = (per_step[0] + per_step[1]) / 2
        assert math.isclose(row[3], loss, rel_tol=1e-12), row
        last = raw[(v, 20, 0)]
        want = (row[0], sum(last.sent), last.errors[LAYER], loss, row[4])
        assert _row_line(*want) in said


def test_after_one_step_the_loss_is_that_step_s() -> None:
    events = [e for e in load_recording(RUN) if e.kind != "run_finished"]
    one = [e for e in events if e.kind != "hook_step" or e.step == 0]
    raw = {(e.variant, e.rank): e for e in _steps(one)}
    rows = summary_rows(record(one))
    for (label, _, _, loss, _), v in zip(rows, dict.fromkeys(v for v, _ in raw), strict=True):
        assert loss == (raw[(v, 0)].loss + raw[(v, 1)].loss) / 2, label


def _only(variants: set[str], **spec):
    events = load_recording(RUN)
    kept = [
        e for e in events if e.kind not in ("hook_step", "hook_low_rank") or e.variant in variants
    ]
    return _with_spec(kept, **spec)


def test_a_run_of_the_default_hook_alone_names_its_buckets() -> None:
    events = _only({"allreduce"}, fp16=False, ranks=[])
    rec = record(events)
    last = next(e for e in _steps(events) if e.step == 13 and e.rank == 0)
    said = run_report(rec).splitlines()
    want = "; ".join(f"b{i}: {', '.join(names)}" for i, names in enumerate(last.names))
    assert f"buckets after the rebuild: {want}" in said
    assert [r[0] for r in summary_rows(rec)] == ["default all-reduce"]
    assert status_line(rec) == (
        "Run 1 finished: 1 hook on 2 ranks; default all-reduce sent 100.0% of the default's "
        "bytes a step."
    )


def test_the_status_line_names_the_hook_that_sent_least_not_the_first_by_name() -> None:
    """The default and fp16 alone: "default all-reduce" sorts before "fp16 compress", but fp16
    sent half the bytes."""
    events = _only({"allreduce", "fp16"}, ranks=[])
    last = {e.variant: sum(e.sent) for e in _steps(events) if e.step == 13 and e.rank == 0}
    assert last["fp16"] < last["allreduce"]
    share = last["fp16"] / last["allreduce"]
    assert status_line(record(events)) == (
        f"Run 1 finished: 2 hooks on 2 ranks; fp16 compress sent {share:.1%} of the default's "
        "bytes a step."
    )


def _last_rank_differs(e):
    if e.kind != "hook_step" or e.step != 13:
        return e
    if e.rank == 1:  # the last rank's own figures and buckets: the report reads rank 0's
        names = [list(reversed(b)) for b in reversed(e.names)]
        errors = {**e.errors, LAYER: e.errors[LAYER] * 3 + 1.0}
        return dataclasses.replace(e, sent=[s + 8 for s in e.sent], errors=errors, names=names)
    if e.variant != "allreduce":  # the other hooks' buckets: the report reads the default's
        return dataclasses.replace(e, names=[["other"]])
    return e


def test_the_rows_and_buckets_are_rank_0_s_of_the_default_when_the_others_differ() -> None:
    events = [_last_rank_differs(e) for e in load_recording(RUN)]
    raw = {(e.variant, e.rank): e for e in _steps(events) if e.step == 13}
    rec = record(events)
    said = run_report(rec).splitlines()
    names = raw[("allreduce", 0)].names
    want = "; ".join(f"b{i}: {', '.join(b)}" for i, b in enumerate(names))
    assert f"buckets after the rebuild: {want}" in said
    variants = list(dict.fromkeys(v for v, _ in raw))
    for (label, sent, error, _, _), v in zip(summary_rows(rec), variants, strict=True):
        assert sent == sum(raw[(v, 0)].sent) != sum(raw[(v, 1)].sent), label
        assert error == raw[(v, 0)].errors[LAYER] != raw[(v, 1)].errors[LAYER], label


def test_a_loss_of_exactly_zero_reads_zero_and_a_missing_error_reads_nan() -> None:
    def change(e):
        if e.kind != "hook_step" or e.step != 13 or e.variant != "fp16":
            return e
        errors = {k: x for k, x in e.errors.items() if k != LAYER}
        return dataclasses.replace(e, loss=0.0, errors=errors)

    events = [change(e) for e in load_recording(RUN)]
    rows = {r[0]: r for r in summary_rows(record(events))}
    _, _, error, loss, _ = rows["fp16 compress"]
    assert loss == 0.0 and math.isnan(error)
    assert rows["default all-reduce"][3] > 0.0
    sent = sum(
        next(e for e in _steps(events) if e.step == 13 and e.rank == 0 and e.variant == "fp16").sent
    )
    line = _row_line("fp16 compress", sent, float("nan"), 0.0, rows["fp16 compress"][4])
    assert line in run_report(record(events)).splitlines()
    assert "nan" in line and "0.00000" in line


def _started_with(steps: int) -> list:
    """The recording's run as if it had been asked for ``steps`` steps (its start only)."""
    import dataclasses

    events = [e for e in load_recording(RUN) if e.kind != "run_finished"]
    out = []
    for e in events:
        if e.kind == "run_started":
            table = {**e.scenario["hook_compression"], "steps": steps}
            e = dataclasses.replace(e, scenario={**e.scenario, "hook_compression": table})
        out.append(e)
    return [e for e in out if e.kind != "hook_step" or e.step < 5]


def test_the_running_line_says_how_many_rounds_and_only_what_holds_for_them() -> None:
    """A 14-step run takes seconds and plays phase by phase: no "minute or two", no "follows
    the newest step" (both were said of every run)."""
    head = "Run 1: 2 rank(s) train one model 6 ways in lockstep,"
    assert running_line(record(_started_with(14))) == (
        f"{head} 14 steps of 6 all-reduce hooks each (84 rounds over gloo)."
    )
    # the stage follows the newest step of a run longer than 30 steps (the session's rule)
    assert running_line(record(_started_with(30))).endswith("(180 rounds over gloo).")
    assert running_line(record(_started_with(31))) == (
        f"{head} 31 steps of 6 all-reduce hooks each (186 rounds over gloo). The stage "
        "follows the newest step."
    )
    # from 600 rounds (100 steps of 6) the wait is worth a word; at 99 steps not yet
    assert running_line(record(_started_with(99))).startswith(
        f"{head} 99 steps of 6 all-reduce hooks each (594 rounds over gloo). The stage"
    )
    assert running_line(record(_started_with(200))) == (
        f"{head} 200 steps of 6 all-reduce hooks each (1200 rounds over gloo): a minute or "
        "more on a laptop. The stage follows the newest step."
    )
    assert running_line(record(_started_with(100))).endswith(
        "(600 rounds over gloo): a minute or more on a laptop. The stage follows the newest step."
    )
