"""The doctor's findings on the watched page and in its pure parts (no torch, no Qt): the
page says the hang first, in words that fit every stage size; the doctor names a hang once per
stall, waits a moment for the ranks' stacks, and never for a rank that ended."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched.doctor import Doctor, hang_lines, hang_threshold, missing
from ddp_viz.kinds.watched.events import WatchBeat
from ddp_viz.model.assets import asset
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import STAGE_SIZES, assert_fits

HANG = "watched-hang.jsonl"  # tests/data/README.md: a barrier against an all-reduce, cut there


def frame(w=1280, h=800, theme="light"):
    rec = record(load_recording(HANG))
    lesson = load_lesson_folder(asset("watched"))
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(len(rec.steps) - 1, 3), 1.0, ctx, lesson.scene)


def test_the_page_says_the_hang_first() -> None:
    f = frame()
    head = f.text_with_key("doctor.hang0")
    assert head.text.startswith("✗ hang: no rank has moved for")
    said = " ".join(t.text for t in f.texts)
    assert "rank 0: inside barrier #4 at doctor.py:" in said
    assert "rank 1: inside all_reduce #4 [3] at doctor.py:" in said
    assert head.box.y < f.text_with_key("rank0.step_time").box.y  # above the ranks' table


@pytest.mark.parametrize(("w", "h", "theme"), STAGE_SIZES)
def test_the_hang_fits_every_stage(w, h, theme) -> None:
    assert_fits(frame(w, h, theme), theme)


def beat(rank: int, progress: int, stack: list[str] | None = None, **inside) -> WatchBeat:
    call = {"seq": 4, "op": "barrier", "site": "t.py:1 in main", **inside} if inside else None
    return WatchBeat(1, rank, 3, progress, 0.01, call, call, stack or [])


def test_a_hang_is_named_once_per_stall_with_the_stacks_and_not_for_ended_ranks() -> None:
    doc = Doctor(fixed=1.0)
    doc.joined(0, 10, 0.0)
    doc.joined(1, 11, 0.0)
    doc.beat(beat(0, 5, op="barrier"), 0.5)
    doc.beat(beat(1, 5, op="all_reduce", sizes=[[3]]), 0.5)
    assert doc.check(1.2) is None  # still: only 0.7 s
    assert doc.check(1.6) is None  # past the threshold, waiting a moment for the stacks
    doc.beat(beat(0, 5, ["t.py:1 in main: dist.barrier()"], op="barrier"), 1.7)
    doc.beat(beat(1, 5, ["t.py:2 in main: dist.all_reduce(x)"], op="all_reduce"), 1.7)
    hang = doc.check(1.8)
    assert hang is not None and doc.check(2.0) is None  # once per stall
    lines = hang_lines(hang)
    assert (
        "  ✗ the ranks' collectives do not match: rank 0 barrier #4 at t.py:1 in main; "
        "rank 1 all_reduce #4 at t.py:1 in main"
    ) in lines
    assert "    t.py:2 in main: dist.all_reduce(x)" in lines
    doc.beat(beat(0, 6), 2.1)  # rank 0 moved: a new stall may be named again later
    assert doc.check(2.2) is None and not doc.reported
    doc.ended(0)
    doc.ended(1)
    assert doc.check(10.0) is None  # training over: no hang


def test_the_threshold_is_a_few_seconds_or_many_steps() -> None:
    assert hang_threshold(float("nan")) == 10.0
    assert hang_threshold(0.01) == 10.0
    assert hang_threshold(2.0) == 40.0
    assert hang_threshold(2.0, fixed=1.5) == 1.5


def test_the_ranks_missing_from_a_collective_are_those_not_inside_it() -> None:
    """Three ranks: two wait in all_reduce #4, one is elsewhere; only that one is missing (a
    two-rank hang has one rank on each side, so it cannot tell 'missing' from 'inside')."""
    doc = Doctor(fixed=1.0)
    for r in range(3):
        doc.joined(r, 10 + r, 0.0)
    stack = ["t.py:1 in main"]
    doc.beat(beat(0, 5, stack, op="all_reduce", sizes=[[3]]), 0.5)
    doc.beat(beat(1, 5, stack, op="barrier"), 0.5)
    doc.beat(beat(2, 5, stack, op="all_reduce", sizes=[[3]]), 0.5)
    hang = doc.check(1.8)
    assert hang is not None
    call, absent = missing(hang)
    assert call is not None and (call["op"], absent) == ("all_reduce", [1])
    assert any(line.startswith("  missing from all_reduce #4: rank 1") for line in hang_lines(hang))
