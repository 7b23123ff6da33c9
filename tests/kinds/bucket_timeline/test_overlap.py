"""Bucket overlap measured from recorded timings (pure), and what it costs backward (real runs)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_viz.kinds.bucket_timeline.overlap import layouts, overlap, ready_order
from ddp_viz.model.timeline import RankStep, RunStatus, record
from tests.conftest import load_recording


def step(ready, buckets, backward=(0.0, 10.0)) -> RankStep:
    return RankStep(
        spans={"backward": [list(backward)]},
        ready=[[n, t] for n, t in ready],
        bucket_spans=[
            {"index": i, "params": p, "bytes": 4, "launched": a, "finished": b}
            for i, (p, a, b) in enumerate(buckets)
        ],
    )


def test_the_hidden_part_is_what_ran_before_the_last_gradient() -> None:
    rs = step(
        ready=[("2.b", 1.0), ("2.w", 2.0), ("0.b", 6.0), ("0.w", 7.0)],
        buckets=[(["2.b", "2.w"], 2.0, 5.0), (["0.b", "0.w"], 7.0, 9.0)],
    )
    o = overlap(rs)
    assert o.last_ready == 7.0 and o.allreduce_s == 5.0
    assert o.hidden_s == 3.0 and o.fraction == pytest.approx(0.6)
    assert ready_order(rs) == ["2.b", "2.w", "0.b", "0.w"]


def test_one_bucket_after_backward_hides_nothing() -> None:
    rs = step(ready=[("w", 1.0), ("b", 2.0)], buckets=[(["b", "w"], 2.0, 4.0)])
    assert overlap(rs).fraction == 0.0
    assert overlap(RankStep()) is None


def test_a_real_run_rebuilds_its_buckets_and_overlaps() -> None:
    rec = record(load_recording("mlp-buckets-2-ranks.jsonl"))
    per_step = layouts(rec)
    assert per_step[0] != per_step[1] and len(per_step[1]) >= 3
    fractions = [overlap(st.ranks[0]).fraction for st in rec.steps[1:]]
    assert max(fractions) > 0


def test_what_overlap_hid_and_what_backward_lost_are_the_runs_own_numbers() -> None:
    """Expected values from the raw events of a real run of the buckets lesson."""
    from statistics import median

    from ddp_viz.kinds.bucket_timeline.overlap import overlap_lines
    from ddp_viz.model.report import run_report

    events = load_recording("buckets-lesson-2-ranks.jsonl")
    cost = next(e for e in events if e.kind == "backward_cost" and e.rank == 0)
    # DDP's all-reduces ran in every synced pass (4 buckets), none under no_sync()
    assert {p[3] for p in cost.synced} == {4.0} and {p[3] for p in cost.alone} == {0.0}
    compute_with = median(p[1] - p[0] for p in cost.synced)
    compute_alone = median(p[1] - p[0] for p in cost.alone)
    total_with = median(p[2] - p[0] for p in cost.synced)
    total_alone = median(p[2] - p[0] for p in cost.alone)
    # hidden: the part of each bucket's span before the step's last gradient, steps 2 on
    hidden, spent = [], []
    for t in (e for e in events if e.kind == "timing" and e.rank == 0 and e.step > 0):
        start, last = t.spans["backward"][0][0], max(at for _, at in t.ready)
        spans = [(b["launched"], b["finished"]) for b in t.buckets]
        spent.append(sum(b - a for a, b in spans))
        hidden.append(sum(max(0.0, min(b, last) - max(a, start)) for a, b in spans))
    lines = overlap_lines(record(events))
    assert lines == [
        f"overlap, rank 0: the buckets' all-reduces took {median(spent) * 1e3:.2f} ms a step "
        f"(launch to result, summed), {median(hidden) * 1e3:.2f} ms of it hidden behind "
        "backward's computation (medians, steps 2–3)",
        f"what backward lost, rank 0: from its start to the last gradient "
        f"{compute_with * 1e3:.2f} ms with DDP's all-reduces, {compute_alone * 1e3:.2f} ms "
        f"under no_sync() with none ({(compute_with - compute_alone) * 1e3:+.2f} ms); it "
        f"returned after {total_with * 1e3:.2f} ms against {total_alone * 1e3:.2f} ms (medians "
        f"of {len(cost.synced)} alternating passes after the run, no optimizer step)",
    ]
    report = run_report(record(events))
    assert all(line in report for line in lines)


@pytest.mark.gloo
def test_overlap_cost_times_backward_with_the_all_reduces_and_under_no_sync(engine) -> None:
    """The buckets lesson's [train] overlap_cost: after the loop every rank times backward
    passes with DDP's all-reduces (the hook ran every bucket) and under no_sync() (it ran
    none), alternating, and the parameters the run ended with are not touched by them."""
    from ddp_viz.kinds.bucket_timeline.overlap import backward_loss
    from ddp_viz.kinds.bucket_timeline.record import backward_cost
    from ddp_viz.model.course import load_lesson

    scenario = load_lesson("buckets").scenario().with_changes(steps=2)
    assert scenario.train.flag("overlap_cost")
    rec = record(engine.run(scenario, timeout=120))
    assert rec.status is RunStatus.FINISHED, rec.reason
    buckets = len(rec.steps[-1].ranks[0].bucket_spans)
    for r in range(rec.world_size):
        cost = backward_cost(rec, r)
        assert len(cost.synced) == len(cost.alone) == 8
        assert {p[3] for p in cost.synced} == {float(buckets)} and buckets > 1
        assert {p[3] for p in cost.alone} == {0.0}
        assert all(p[0] <= p[1] <= p[2] for p in cost.synced + cost.alone)
        assert backward_loss(rec, r) is not None


@pytest.mark.gloo
def test_overlap_cost_is_measured_in_a_run_no_bucket_lesson_shows(engine) -> None:
    """[train] overlap_cost is a knob of every DDP run: a linear model's run, whose lesson is
    the DDP step's, still times its backward and reports it."""
    from ddp_viz.kinds.bucket_timeline.record import backward_cost
    from ddp_viz.model.course import lesson_for, load_lesson
    from ddp_viz.model.report import run_report

    base = load_lesson("ddp-pattern").scenario().with_changes(steps=1)
    scenario = replace(base, train=replace(base.train, flags=frozenset({"overlap_cost"})))
    assert lesson_for(scenario.to_dict()) == "ddp-pattern"
    rec = record(engine.run(scenario, timeout=120))
    assert rec.status is RunStatus.FINISHED, rec.reason
    assert all(backward_cost(rec, r) is not None for r in range(rec.world_size))
    assert "what backward lost, rank 0" in run_report(rec)
