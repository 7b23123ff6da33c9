"""The sharded stage's checks after a step: each way's ✓ against DDP turns ✗ just past its
tolerance on the last rank alone (and stays ✓ at it), in its full line and in the one-line
form a short stage uses, in its colour; the ring's line says the bytes a reduce-scatter and an
all-gather send; a line is drawn in the longest text that fits, or not at all (pure)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ddp_viz.kinds.sharded.model import GRAD_TOL, PARAM_TOL
from ddp_viz.kinds.sharded.scene import ShardedBuilder
from ddp_viz.kinds.sharded.scene_checks import checks, draw_checks, one_check
from ddp_viz.kinds.sharded.scene_lanes import human
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Rect, estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

NAME = "sharded-4-ranks.jsonl"
STEP = 1


def builder(events) -> ShardedBuilder:
    lesson = load_lesson("sharded")
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    return ShardedBuilder(record(events), Cursor(STEP, 3), 1.0, ctx)


def with_diff(way: str, rank: int, **diffs: float):
    out = []
    for e in load_recording(NAME):
        if e.kind == "sharded_step" and (e.way, e.rank, e.step) == (way, rank, STEP):
            e = dataclasses.replace(e, **diffs)
        out.append(e)
    return out


def test_the_recorded_run_is_within_both_tolerances_on_every_rank() -> None:
    lines = [json.loads(x) for x in (DATA / NAME).read_text().splitlines() if x]
    steps = [d for d in lines if d["event"] == "sharded_step" and d["step"] == STEP]
    assert {d["rank"] for d in steps} == {0, 1, 2, 3}
    assert all(d["param_diff"] <= PARAM_TOL and d["grad_diff"] <= GRAD_TOL for d in steps)
    b = builder(load_recording(NAME))
    marks = [texts[0][0] for texts, _, key in checks(b, STEP) if key != "check.ring"]
    assert marks == ["✓", "✓"]
    texts, ink, key = one_check(b, STEP)
    assert texts[0].startswith("✓ ZeRO-1 and FSDP2 train DDP's weights (")
    assert (ink, key) == (b.t.ok, "check.both")


@pytest.mark.parametrize("way", ["zero", "fsdp"])
@pytest.mark.parametrize(("field", "tol"), [("param_diff", PARAM_TOL), ("grad_diff", GRAD_TOL)])
def test_each_way_turns_red_just_past_its_tolerance_on_the_last_rank(way, field, tol) -> None:
    at = builder(with_diff(way, 3, **{field: tol}))
    past = builder(with_diff(way, 3, **{field: tol * 1.5}))
    key = f"check.{way}"
    (ok_texts, ok_ink), (bad_texts, bad_ink) = [
        next((t, ink) for t, ink, k in checks(b, STEP) if k == key) for b in (at, past)
    ]
    assert ok_texts[0].startswith("✓ ") and ok_ink == at.t.ok
    assert bad_texts[0].startswith("✗ ") and bad_ink == past.t.bad
    assert all(t.startswith("✗ ") for t in bad_texts)
    other = next(
        t
        for t, _, k in checks(past, STEP)
        if k.startswith("check.") and k != key and k != "check.ring"
    )
    assert other[0].startswith("✓ ")  # the other way is unaffected
    for b, mark, ink in ((at, "✓", at.t.ok), (past, "✗", past.t.bad)):
        texts, got_ink, k = one_check(b, STEP)
        assert [t[0] for t in texts] == [mark, mark] and got_ink == ink and k == "check.both"


def test_the_full_line_gives_the_largest_difference_over_the_ranks() -> None:
    b = builder(with_diff("fsdp", 3, param_diff=3e-4))
    texts = next(t for t, _, k in checks(b, STEP) if k == "check.fsdp")
    assert "params within 3e-04 of DDP's" in texts[0]
    assert "(within 3e-04)" in texts[1]
    assert "(within 3e-04)" in one_check(b, STEP)[0][0]


def test_the_ring_line_says_what_a_reduce_scatter_and_an_all_gather_send() -> None:
    lines = [json.loads(x) for x in (DATA / NAME).read_text().splitlines() if x]
    world = 4
    gathers = [
        d["bytes_out"]
        for d in lines
        if d["event"] == "sharded_collective"
        and (d["way"], d["step"], d["rank"], d["op"]) == ("fsdp", STEP, 1, "all_gather")
    ]
    big = max(gathers)
    sent = 2 * big * (world - 1) / world  # (N-1)/N of the whole tensor each, on a ring
    b = builder(load_recording(NAME))
    texts, ink, key = next(c for c in checks(b, STEP) if c[2] == "check.ring")
    assert texts == [
        f"ring: RS + AG of {human(big)} send {human(sent)} a rank: an all-reduce",
        f"RS + AG = 1 ring all-reduce: {human(sent)}",
    ]
    assert (ink, key) == (b.t.muted, "check.ring")


def test_a_line_is_drawn_in_the_longest_text_that_fits_or_not_at_all() -> None:
    b = builder(load_recording(NAME))
    lines = [(["a long text of its line", "short"], b.t.ok, "check.x")]
    wide = Rect(0, 0, 2000, 200)
    h = draw_checks(b, wide, lines)
    assert [t.text for t in b.frame.texts if t.key == "check.x"] == ["a long text of its line"]
    assert h > 0
    b = builder(load_recording(NAME))
    narrow = Rect(0, 0, b.width("short", b.small) + 1, 200)
    draw_checks(b, narrow, lines)
    assert [t.text for t in b.frame.texts if t.key == "check.x"] == ["short"]
    exact = Rect(0, 0, b.width("short", b.small), 200)
    b2 = builder(load_recording(NAME))
    draw_checks(b2, exact, lines)
    assert [t.text for t in b2.frame.texts if t.key == "check.x"] == ["short"]
    b3 = builder(load_recording(NAME))
    draw_checks(b3, Rect(0, 0, 2, 200), lines)  # nothing fits
    assert [t.text for t in b3.frame.texts if t.key == "check.x"] == []
    b4 = builder(load_recording(NAME))
    draw_checks(b4, Rect(0, 0, 2000, b4.text_h - 1), lines)  # no room for a line
    assert [t.text for t in b4.frame.texts if t.key == "check.x"] == []
    b5 = builder(load_recording(NAME))
    draw_checks(b5, Rect(0, 0, 2000, b5.text_h), lines)  # just room
    assert [t.text for t in b5.frame.texts if t.key == "check.x"] == ["a long text of its line"]
