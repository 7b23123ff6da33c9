"""More of the last two phases against the raw events of the 4-rank recording and copies of it:
rank 0's stack line needs two frames (a heartbeat one frame deep says none), its wait line
takes the short function name when the whole one does not fit, the module attempt's heading
comes only with room for it and a line under it, and the masks are drawn once rank 0's first
mask is in, before the other ranks' (pure: recordings, no Qt, no torch)."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
FOUR = "evaluation-4-ranks.jsonl"
MODULE_HEAD = "rank 0: model.module(x) · others: dist.barrier()"


def frame(events, phase: int = 2, w: float = 1200, h: float = 700) -> StageFrame:
    lesson = lesson_of("evaluation")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)


def name(frame_text: str) -> str:
    return frame_text.split(" (")[0]


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_rank_0s_stack_line_needs_two_frames(depth) -> None:
    events = [
        dataclasses.replace(e, where=e.where[:depth])
        if e.kind == "eval_wait" and e.rank == 0
        else e
        for e in load_recording(FOUR)
    ]
    beat = [e for e in events if e.kind == "eval_wait" and e.rank == 0][-1]
    assert len(beat.where) == depth
    f = frame(events)
    line = f.text_with_key("stack.0")
    if depth < 2:
        assert line is None
        return
    names = [name(w).rsplit(".", 1)[-1] for w in reversed(beat.where)]
    assert line.text == f"rank 0's stack: {' → '.join(names)}"
    assert line.color == THEME.muted


def test_a_wait_line_too_long_whole_says_the_function_without_its_class() -> None:
    events = load_recording(FOUR)
    done = next(
        e for e in events if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("wrapper", 0)
    )
    beat = [e for e in events if e.kind == "eval_wait" and e.rank == 0][-1]
    full = name(beat.where[0])
    short = full.rsplit(".", 1)[-1]
    assert short != full
    whole = f"{done.what}: waited {done.seconds:.2f} s in {full}"
    cut = f"{done.what}: waited {done.seconds:.2f} s in {short}"
    f = frame(events, w=720)
    line = f.text_with_key("wait.0")
    label = next(t for t in f.texts if t.text == "rank 0" and t.box.y == line.box.y)
    room = 720 - line.box.x - label.box.x  # the stage less the labels and a margin
    assert estimate_width(whole, line.font) > room >= estimate_width(cut, line.font)
    assert line.text == cut
    assert frame(events, w=1400).text_with_key("wait.0").text == whole


def test_the_module_attempt_heading_comes_only_with_room_for_a_line_under_it() -> None:
    # after the wrapper's lines and a 0.3-margin gap, the heading and the line under it
    # (two lines) must end above the body's bottom (half a margin above the stage's)
    shown = 0
    for h in range(240, 520, 4):
        lesson = lesson_of("evaluation")
        ctx = SceneContext(1200, h, THEME, lesson.phase_text, estimate_width)
        pad = max(ctx.base_px, ctx.min_px) * 0.6
        f = stage_frame(record(load_recording(FOUR)), Cursor(0, 2), 1.0, ctx, lesson.scene)
        lh = f.text_with_key("wait.0").font.px * 1.3
        heads = [t for t in f.texts if t.text == MODULE_HEAD]
        before = [t for t in f.texts if not heads or t.box.y < heads[0].box.y]
        y = max(t.box.y for t in before) + lh + 0.3 * pad
        fits = y + 2 * lh <= h - 0.5 * pad
        assert bool(heads) is fits, h
        if heads:
            shown += 1
            assert heads[0].box.y == pytest.approx(y)
        assert all(t.box.bottom <= h + 0.5 for t in f.texts), h
    assert 0 < shown < 70  # heights on either side


def test_the_masks_are_drawn_once_rank_0s_first_mask_is_in() -> None:
    events = load_recording(FOUR)
    masks = [i for i, e in enumerate(events) if e.kind == "dropout_mask"]
    first = events[masks[0]]
    assert (first.seeding, first.rank) == ("same", 0)
    before = frame(events[: masks[0]], phase=3)
    assert "Waiting for the first step's masks…" in before.all_text()
    f = frame(events[: masks[0] + 1], phase=3)
    assert "Waiting for the first step's masks…" not in f.all_text()
    kept = sum(sum(row) for row in first.mask)
    filled = [s for s in f.shapes if s.fill and s.kind == "rect"]
    assert len(filled) == kept  # rank 0's mask alone: a filled cell a unit kept
