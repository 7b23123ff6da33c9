"""What the buckets stage says under its timeline, from the raw timing events: how much of each
rank's all-reduce time backward hid (per rank, or the range with the rank that hid most when the
stage is narrow), in the ok colour only when something was hidden; how many gradients were
still to come when rank 0's first all-reduce started; the order the gradients became ready."""

from __future__ import annotations

import pytest

from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import RunStatus, record
from tests.conftest import load_recording
from tests.kinds.bucket_timeline.test_buckets_scene import FOUR, TWO, frame_at

EIGHT = "buckets-lesson-8-ranks.jsonl"


def timings(name: str, step: int) -> dict:
    return {e.rank: e for e in load_recording(name) if e.kind == "timing" and e.step == step}


def shares(name: str, step: int) -> dict[int, int]:
    """Each rank's hidden share in %, from its raw spans."""
    out = {}
    for r, t in sorted(timings(name, step).items()):
        start, last = t.spans["backward"][0][0], max(at for _, at in t.ready)
        spans = [(b["launched"], b["finished"]) for b in t.buckets]
        total = sum(b - a for a, b in spans)
        hidden = sum(max(0.0, min(b, last) - max(a, start)) for a, b in spans)
        out[r] = round(hidden / total * 100)
    return out


@pytest.mark.parametrize("name", [FOUR, EIGHT])
def test_a_wide_stage_says_each_ranks_share(name: str) -> None:
    want = shares(name, 1)
    assert len(set(want.values())) > 1  # the ranks differ: a share of the wrong rank shows
    line = " ".join(frame_at(record(load_recording(name)), 1, 3, w=2400, h=1400).all_text().split())
    parts = "  ·  ".join(f"rank {r}: {p}%" for r, p in want.items())
    assert " ".join(f"All-reduce time hidden behind backward: {parts}".split()) in line


@pytest.mark.parametrize("name", [FOUR, EIGHT])
def test_a_narrow_stage_says_the_range_and_the_rank_that_hid_most(name: str) -> None:
    want = shares(name, 1)
    most = max(want, key=lambda r: want[r])
    text = " ".join(frame_at(record(load_recording(name)), 1, 3, w=560, h=900).all_text().split())
    low, high = min(want.values()), want[most]
    assert f"Hidden behind backward: {low}–{high}% per rank (most: rank {most})" in text
    assert "% · rank" not in text  # not the per-rank form


def test_nothing_hidden_on_any_rank_is_said_once_and_not_in_the_ok_colour() -> None:
    rec = record(load_recording(EIGHT))
    assert set(shares(EIGHT, 0).values()) == {0}
    narrow = frame_at(rec, 0, 3, w=560, h=900)
    assert "Hidden behind backward: 0% on every rank" in " ".join(narrow.all_text().split())
    theme = load_theme("light")
    wide = frame_at(rec, 0, 3, w=2400, h=1400)
    line = next(t for t in wide.texts if t.text.startswith("All-reduce time hidden"))
    assert line.color == theme.text
    later = frame_at(rec, 1, 3, w=2400, h=1400)
    line = next(t for t in later.texts if t.text.startswith("All-reduce time hidden"))
    assert line.color == theme.ok


@pytest.mark.parametrize("name", [TWO, FOUR])
def test_the_first_all_reduce_started_while_this_many_gradients_were_to_come(name: str) -> None:
    rec = record(load_recording(name))
    for step, t in ((s, timings(name, s)[0]) for s in range(len(rec.steps))):
        first = min(t.buckets, key=lambda b: b["launched"])
        waiting = sum(1 for _, at in t.ready if at > first["launched"])
        text = " ".join(frame_at(rec, step, 2, w=2400, h=1400).all_text().split())
        if step == 0:
            assert waiting == 0
            assert (
                f"Rank 0's all-reduce (bucket {first['index']}) could only start after every "
                "gradient was ready: nothing left to overlap with." in text
            )
        else:
            assert waiting > 0
            assert (
                f"Rank 0's first all-reduce (bucket {first['index']}) started while {waiting} "
                "gradient(s) were still to be computed." in text
            )
        # not before the sweep has passed
        assert "Rank 0's" not in frame_at(rec, step, 2, 0.5, w=2400, h=1400).all_text()


def test_the_ready_order_is_rank_0s_by_recorded_time_once_backward_has_played() -> None:
    rec = record(load_recording(FOUR))
    t = timings(FOUR, 1)[0]
    order = " → ".join(n for n, _ in sorted(t.ready, key=lambda x: x[1]))
    text = " ".join(frame_at(rec, 1, 1, w=2400, h=1400).all_text().split())
    assert f"Ready, last layer first (rank 0): {order}" in text
    assert "Ready, last layer first" not in frame_at(rec, 1, 1, 0.9, w=2400, h=1400).all_text()


def test_the_plan_counts_this_steps_buckets_and_explains_step_1_only() -> None:
    rec = record(load_recording(FOUR))
    n = len(timings(FOUR, 1)[0].buckets)
    assert n > 1
    later = " ".join(frame_at(rec, 1, 0, w=2400, h=1400).all_text().split())
    assert f"This step DDP all-reduces the gradients in {n} buckets." in later
    assert "before step 2 it rebuilds" not in later
    first = " ".join(frame_at(rec, 0, 0, w=2400, h=1400).all_text().split())
    assert "This step DDP all-reduces the gradients in one bucket." in first
    assert "before step 2 it rebuilds the buckets" in first


def test_the_title_counts_the_steps_and_names_the_cap() -> None:
    rec = record(load_recording(FOUR))
    cap = rec.scenario["ddp"]["bucket_cap_mb"]
    texts = [t.text for t in frame_at(rec, 1, 2, w=2400, h=1400).texts]
    assert "Step 2 of 2  ·  3 · each bucket's all-reduce" in texts
    assert f"bucket_cap_mb = {cap:g}" in texts
    rec.scenario = {**rec.scenario, "ddp": {}}
    assert not any("bucket_cap_mb" in t.text for t in frame_at(rec, 1, 2).texts)


@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.CANCELLED])
def test_a_run_that_ended_early_says_why_in_the_bad_colour(status: RunStatus) -> None:
    rec = record(load_recording(FOUR))
    rec.status, rec.reason = status, "rank 3 exited with code 1"
    frame = frame_at(rec, 1, 3, w=2400, h=1400)
    line = next(t for t in frame.texts if t.text.startswith("run "))
    assert line.text == f"run {status}: rank 3 exited with code 1"
    assert line.color == load_theme("light").bad
    assert "Hidden behind backward" not in frame.all_text()
