"""Scenes at every phase of every step, not only at their last frame (pure: recorded events, no
Qt, no torch): what each phase shows is the recorded value, and what belongs to a later step or
a later phase is not shown yet. Expected values are read from the raw events."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.collective.scene import cell_text
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record, walk
from tests.conftest import load_recording


def frames(lesson: str, name: str):
    """(cursor, frame) at every phase of every step of a recording, in the lesson's scene."""
    info = load_lesson(lesson)
    ctx = SceneContext(1280, 720, load_theme("light"), info.phase_text, estimate_width)
    events = load_recording(name)
    rec = record(events)
    return events, [
        (c, stage_frame(rec, c, 1.0, ctx, info.scene)) for c in walk(rec.complete_prefix())
    ]


@pytest.mark.parametrize("name", ["uneven-join.jsonl", "uneven-stall.jsonl"])
def test_the_uneven_lanes_show_each_loss_from_its_own_step_on(name) -> None:
    events, shown = frames("uneven-inputs", name)
    losses = {(e.step, e.rank): e.loss for e in events if e.kind == "local_grad"}
    shadows = {(e.step, e.rank) for e in events if e.kind == "join_shadow"}
    assert len({s for s, _ in losses}) >= 2
    for cursor, f in shown:
        numbers = f.numbers()
        for (s, r), loss in losses.items():
            key = f"rank{r}.step{s}.loss"
            # a step's loss comes out of its forward: shown from its "local" phase on
            if s < cursor.step or (s == cursor.step and cursor.phase >= 1):
                assert numbers.get(key) == loss, (cursor, key)
            else:
                assert key not in numbers, (cursor, key)  # a later step: not yet
        for s, r in shadows:
            line = f.text_with_key(f"shadow.{s}.{r}")
            due = s < cursor.step or (s == cursor.step and cursor.phase >= 2)
            assert (line is not None) is due, (cursor, s, r)
        # how the run ended: once the last step's optimizer step has been shown
        last = cursor.step == shown[-1][0].step and cursor.phase == 3
        assert (f.text_with_key("final") is not None) is (last and name == "uneven-join.jsonl")


@pytest.mark.parametrize("name", ["ring-2-ranks.jsonl", "ring-4-ranks.jsonl", "ring-8-ranks.jsonl"])
def test_each_ring_buffer_changes_in_the_phase_its_chunk_arrives_and_not_before(name) -> None:
    """Every cell at every phase of every ring step against the buffers replayed here from the
    raw events: the inputs cut at their recorded bounds, then each received chunk's values."""
    events, shown = frames("all-reduce", name)
    inputs = {e.rank: e for e in events if e.kind == "collective_input"}
    moves = {(e.step, e.rank): e for e in events if e.kind == "ring_step"}
    world = len(inputs)
    state = {
        (r, c): list(i.values[a:b]) for r, i in inputs.items() for c, (a, b) in enumerate(i.chunks)
    }
    after = {-1: dict(state)}
    for step in range(max(s for s, _ in moves) + 1):
        for r in range(world):
            m = moves[(step, r)]
            state[(r, m.received)] = list(m.chunk)
        after[step] = dict(state)
    seen = 0
    for cursor, f in shown:
        if f.text_with_key("rank0.chunk0") is None:
            assert cursor.phase == 3  # the closing charts take the last step's last phase
            continue
        held = after[cursor.step if cursor.phase >= 2 else cursor.step - 1]
        for (r, c), values in held.items():
            cell = f.text_with_key(f"rank{r}.chunk{c}")
            assert cell.text == cell_text(values), (cursor, r, c, cell.text, values)
        seen += 1
    assert seen >= 4 * 2 - 1


def test_bucket_bars_appear_in_the_order_the_buckets_were_launched() -> None:
    """The all-reduce phase sweeps over the step's time: a bucket's bar appears once the sweep
    passes its recorded launch, so what shows is always the earliest launched."""
    info = load_lesson("buckets")
    ctx = SceneContext(1280, 720, load_theme("light"), info.phase_text, estimate_width)
    events = load_recording("buckets-lesson-2-ranks.jsonl")
    rec = record(events)
    (timing,) = [e for e in events if e.kind == "timing" and e.step == 1 and e.rank == 0]
    order = [b["index"] for b in sorted(timing.buckets, key=lambda b: b["launched"])]
    counts = []
    for progress in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        f = stage_frame(rec, Cursor(1, 2), progress, ctx, info.scene)
        bars = {s.key for s in f.shapes if s.key.startswith("rank0.bucket")}
        assert bars == {f"rank0.bucket{i}" for i in order[: len(bars)]}, (progress, bars)
        counts.append(len(bars))
    assert counts == sorted(counts) and counts[0] < counts[-1] == len(order)


# lesson, recording: scenes that write DDP's average and "all ranks equal" under the table
AVERAGE_THEN_EQUAL = [
    ("who-splits-the-data", "who-splits-3-ranks.jsonl", "DDP's average:"),
    ("accumulate-with-no-sync", "accumulate-3-micro.jsonl", "DDP's .grad at optimizer.step():"),
    ("ddp-pattern", "four-ranks-3-steps.jsonl", "average = full batch"),
]


@pytest.mark.parametrize(("lesson", "name", "average"), AVERAGE_THEN_EQUAL)
def test_the_average_waits_for_the_all_reduce_and_equal_ranks_for_the_step(
    lesson, name, average
) -> None:
    info = load_lesson(lesson)
    ctx = SceneContext(1280, 720, load_theme("light"), info.phase_text, estimate_width)
    rec = record(load_recording(name))
    assert rec.complete_prefix() >= 2
    for step in range(2):
        for phase in range(4):
            for progress in (0.0, 0.49, 1.0):
                f = stage_frame(rec, Cursor(step, phase), progress, ctx, info.scene)
                text = " ".join(f.all_text().split())
                due = phase == 3 or (phase == 2 and progress >= 0.5)
                if info.scene != "ddp_step":  # the others show it for the whole phase
                    due = phase >= 2
                assert (average in text) is due, (step, phase, progress)
                equal = phase == 3 and progress >= 1.0
                assert ("✓ all ranks equal" in text) is equal, (step, phase, progress)
