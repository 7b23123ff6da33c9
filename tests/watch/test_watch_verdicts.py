"""Each doctor verdict on both sides (pure: no torch, no Qt): a case where it must name the
fault next to one, as close as the rule allows, where it must not. The real runs in
``test_watch_doctor.py`` show the detectors work on torchrun; these pin their rules: which step
is "first", which rank is "missing", when two collectives "do not match", when a rank that was
last is a straggler and when it is noise."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.kinds.watched.checks import (
    PART,
    Doctoring,
    desync_text,
    findings,
    non_finite_text,
)
from ddp_viz.kinds.watched.doctor import Doctor, hang_lines, mismatch
from ddp_viz.kinds.watched.events import WatchBeat, WatchDigests, WatchNonFinite
from ddp_viz.kinds.watched.straggler import straggler_text
from ddp_viz.model.timeline import record
from tests.conftest import load_recording


def _call(op: str, *sizes: list[int]) -> dict:
    return {"seq": 9, "op": op, "site": "t.py:3 in main", "sizes": [list(s) for s in sizes]}


def _hang(*calls: dict):
    doc = Doctor(fixed=1.0)
    for rank, call in enumerate(calls):
        doc.joined(rank, 100 + rank, 0.0)
        doc.beat(WatchBeat(1, rank, 2, 5, 0.01, call, call, ["t.py:3 in main"]), 0.0)
    hang = doc.check(5.0)
    assert hang is not None
    return hang


def test_collectives_of_one_op_with_other_sizes_do_not_match() -> None:
    assert mismatch(_hang(_call("all_reduce", [3]), _call("all_reduce", [3]))) == ""
    bad = mismatch(_hang(_call("all_reduce", [3]), _call("all_reduce", [4])))
    assert bad.startswith("the ranks' collectives do not match: rank 0 all_reduce #9 [3]")
    assert "rank 1 all_reduce #9 [4]" in bad
    lines = hang_lines(_hang(_call("all_reduce", [3]), _call("all_reduce", [4])), stacks=False)
    assert any(line.startswith("  ✗ the ranks' collectives do not match") for line in lines)


def test_a_lost_rank_is_named_with_the_step_its_events_reached_not_its_last_beat() -> None:
    doc = Doctor()
    doc.joined(1, 4242, 0.0)
    doc.beat(WatchBeat(1, 1, 3, 7, 0.01), 0.5)  # a beat during its third step …
    doc.stepped(1, 5)  # … then step 5's events (sent as the seventh step began)
    lost = doc.lost(1)
    assert lost is not None and (lost.rank, lost.pid, lost.step) == (1, 4242, 7)
    assert doc.lost(1) is None  # once


def test_the_first_non_finite_is_the_earliest_step_then_the_lowest_rank() -> None:
    d = Doctoring(world=3)
    for step, rank in ((5, 1), (3, 2), (3, 1), (4, 0)):  # the order they arrived in
        d.apply(WatchNonFinite(1, step, rank, float("nan"), ["fc.weight"]))
    first = min(d.non_finite, key=lambda e: (e.step, e.rank))
    assert non_finite_text(first).startswith("✗ non-finite: at step 4 on rank 1 (the first)")
    rec = record(load_recording("watched-2-ranks.jsonl"))
    rec.parts[PART] = d
    said = dict(findings(rec))["non_finite"]
    assert said == [non_finite_text(first)]


def _digests(d: Doctoring, step: int, by_rank: dict[int, str]) -> None:
    for rank, crc in by_rank.items():  # one rank at a time, as they arrive
        d.apply(WatchDigests(1, step, rank, {"fc.weight": "aa", "bn.running_mean": crc}))


def test_a_desync_waits_for_every_rank_and_names_the_one_that_differs() -> None:
    d = Doctoring(world=3)
    _digests(d, 2, {0: "01", 1: "01", 2: "01"})
    _digests(d, 4, {0: "01", 1: "01", 2: "01"})
    _digests(d, 6, {0: "02", 1: "02", 2: "02"})
    assert d.desync is None and d.agreed == 6
    _digests(d, 8, {2: "03", 0: "04", 1: "04"})  # rank 2 first, alone: nothing to compare yet
    assert d.desync is not None
    assert d.desync.tensors == {"bn.running_mean": [2]}
    assert desync_text(d.desync) == (
        "✗ desync: entering step 9 (after step 8), rank 2 held other bytes than rank 0 in "
        "bn.running_mean; identical entering step 7"
    )


def _arrivals(lates: list[float], step_s: float = 0.05):
    """The watched two-rank recording's steps, repeated: at step i rank 1 launches its first
    bucket ``lates[i]`` seconds after rank 0 (a derived record: the waits are the test's)."""
    events = load_recording("watched-2-ranks.jsonl")
    timing = {e.rank: e for e in events if e.kind == "timing" and e.step == 1}
    head = [e for e in events if getattr(e, "step", None) is None and e.kind != "run_finished"]
    tail = [e for e in events if e.kind == "run_finished"]
    out = list(head)
    for step, late in enumerate(lates):
        t0 = step_s * step
        for rank, e in sorted(timing.items()):
            start = min(b["launched"] for b in e.buckets)
            shift = t0 - start + (late if rank == 1 else 0.0)
            spans = {k: [[a + shift, b + shift] for a, b in v] for k, v in e.spans.items()}
            buckets = [
                {**b, "launched": b["launched"] + shift, "finished": b["finished"] + shift}
                for b in e.buckets
            ]
            out.append(dataclasses.replace(e, step=step, spans=spans, buckets=buckets))
    return out + tail


@pytest.mark.parametrize(
    ("lates", "verdict"),
    [
        ([0.02] * 10, "✗ straggler: rank 1 was the last to reach the all-reduce in 9 of 9"),
        ([0.0015] * 10, "no straggler: rank 1 was the last to reach the all-reduce in 9 of 9"),
        ([0.006] * 10, "✗ straggler: rank 1"),
        ([0.004] * 10, "no straggler: rank 1"),  # under a tenth of its 50 ms steps
        ([0.02, -0.02] * 5, "no straggler"),  # last in half the steps: someone has to be
        # last in 6 of 9 at 2 ranks: chance does that half the time (binomial), whatever the
        # wait; in 9 of 9 (the first case) it is a 1-in-256 event
        (
            [0.02] * 7 + [-0.02] * 3,
            "no straggler: rank 1 was the last to reach the all-reduce in 6",
        ),
    ],
)
def test_a_straggler_is_last_in_most_steps_by_more_than_noise(lates, verdict) -> None:
    said = straggler_text(record(_arrivals(lates)))
    assert said is not None and said.startswith(verdict), said


def test_at_eight_ranks_the_odd_rank_out_is_named_first_and_the_rest_in_one_line() -> None:
    """Seven ranks inside DDP's all-reduce and one asleep: the missing rank comes right after
    the headline, and the seven share one line (a short stage shows the first few lines)."""
    doc = Doctor(fixed=1.0)
    for rank in range(8):
        doc.joined(rank, 100 + rank, 0.0)
        if rank == 1:
            last = {**_call("all_reduce", [65]), "seq": 10, "bucket": 0, "step": 9}
            beat = WatchBeat(1, 1, 10, 5, 0.01, None, last, ["t.py:7 in main: time.sleep(600)"])
        else:
            call = {**_call("all_reduce", [65]), "seq": 11, "bucket": 0, "step": 10}
            call["for_s"] = 3.4 if rank % 2 else 3.5
            beat = WatchBeat(1, rank, 11, 5, 0.01, call, call, ["t.py:9 in main"])
        doc.beat(beat, 0.0)
    hang = doc.check(5.0)
    assert hang is not None
    lines = hang_lines(hang, stacks=False)
    assert lines[1] == "  missing from all_reduce #11: rank 1"
    assert lines[2:] == [
        "  ranks 0, 2–7: inside DDP's gradient all_reduce #11 [65] (bucket 0 of step 11) at "
        "t.py:3 in main for 3.4–3.5 s, in or after their step 11 (10 reported)",
        "  rank 1: in no communication, in or after its step 10 (9 reported); running t.py:7 in "
        "main: time.sleep(600); its last communication: DDP's gradient all_reduce #10 [65] "
        "(bucket 0 of step 10) at t.py:3 in main",
    ]


def test_rank_lists_read_as_runs() -> None:
    from ddp_viz.kinds.watched.doctor import rank_list

    assert rank_list([3]) == "rank 3"
    assert rank_list([0, 1]) == "ranks 0, 1"
    assert rank_list([0, 2, 3, 4, 5, 6, 7]) == "ranks 0, 2–7"
    assert rank_list([5, 0, 1, 2, 7]) == "ranks 0–2, 5, 7"


def test_the_header_and_the_hang_count_steps_alike() -> None:
    """The header said "step 2 of 3" while the hang said "its latest step 4": the header
    counted steps reported, the heartbeat steps begun. Both now say how many were reported
    (a rank reports a step as its next begins)."""
    from ddp_viz.kinds.watched.events import WatchHang
    from ddp_viz.model import protocol
    from ddp_viz.model.assets import asset
    from ddp_viz.model.frame import estimate_width
    from ddp_viz.model.lesson import load_lesson_folder
    from ddp_viz.model.scenes import SceneContext, stage_frame
    from ddp_viz.model.theme import load_theme
    from ddp_viz.model.timeline import Cursor, RunRecord

    rec = RunRecord()
    rec.apply(protocol.RunStarted(1, 2, 0, {"watched": True}, params=[{"name": "w", "shape": [1]}]))
    for step, ranks in ((0, (0, 1)), (1, (0, 1)), (2, (0,))):  # rank 1 asleep in its step 3
        for r in ranks:
            t = float(step)
            bucket = {"index": 0, "params": ["w"], "bytes": 4, "launched": t, "finished": t + 0.1}
            rec.apply(protocol.Timing(1, step, r, {"forward": [[t, t + 0.01]]}, buckets=[bucket]))
    barrier = {"seq": 4, "op": "all_reduce", "site": "t.py:5 in main", "sizes": [[1]],
               "bucket": 0, "step": 3, "for_s": 2.0}  # fmt: skip
    rec.apply(WatchHang(1, 2.0, 1.0, [
        {"rank": 0, "state": "inside", "step": 4, "inside": barrier},
        {"rank": 1, "state": "outside", "step": 3, "stack": ["t.py:9 in main: time.sleep(60)"]},
    ]))  # fmt: skip
    lesson = load_lesson_folder(asset("watched"))
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    text = stage_frame(rec, Cursor(1, 3), 1.0, ctx, lesson.scene).all_text()
    text = text.replace("\n", " ")  # the page wraps long lines
    assert "Your run · step 2 of 3 reported" in text
    assert "rank 0: inside DDP's gradient all_reduce #4 [1] (bucket 0 of step 4)" in text
    assert "in or after its step 4 (3 reported)" in text  # rank 0: the header's 3
    assert "rank 1: in no communication, in or after its step 3 (2 reported)" in text
    assert "latest step" not in text
