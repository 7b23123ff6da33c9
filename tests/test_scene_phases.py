"""Scenes at every phase of every step, not only at their last frame (pure: recorded events, no
Qt, no torch): what each phase shows is the recorded value, and what belongs to a later step or
a later phase is not shown yet. Expected values are read from the raw events."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.scenes.ring import cell_text
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import record, walk
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
            if s <= cursor.step:
                assert numbers.get(key) == loss, (cursor, key)
            else:
                assert key not in numbers, (cursor, key)  # a later step: not yet
        for s, r in shadows:
            line = f.text_with_key(f"shadow.{s}.{r}")
            due = s < cursor.step or (s == cursor.step and cursor.phase >= 2)
            assert (line is not None) is due, (cursor, s, r)
        last = cursor.step == shown[-1][0].step
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
