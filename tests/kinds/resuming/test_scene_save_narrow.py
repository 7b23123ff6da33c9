"""The save phase on a narrow stage, where each rank's load line and the verdict take their
short forms: the sign in a rank's short line is still that rank's own comparison with what rank
0 saved (on a copy of the 4-rank recording where the last rank loaded other bytes: ≠ in the bad
colour there, = elsewhere) and the short verdict turns ✗. Before the ranks report, every phase
says it waits, in muted type, under the caption. Expected from the raw events."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
FOUR = "resuming-4-ranks.jsonl"
OTHER = "0badc0de"


def frame(events, phase: int, w: int, h: int):
    lesson = lesson_of("resuming")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)


def last_rank_loads_other_bytes(events):
    world = next(e for e in events if e.kind == "run_started").world_size
    return [
        dataclasses.replace(e, weights=OTHER)
        if e.kind == "checkpoint_loaded" and e.rank == world - 1
        else e
        for e in events
    ]


@pytest.mark.parametrize("w", [300, 360, 420])
@pytest.mark.parametrize("changed", [False, True])
def test_a_narrow_stage_keeps_each_ranks_own_sign_in_the_short_load_line(w, changed) -> None:
    events = load_recording(FOUR)
    if changed:
        events = last_rank_loads_other_bytes(events)
    saved = next(e for e in events if e.kind == "checkpoint_saved")
    assert saved.weights != OTHER
    loads = {e.rank: e for e in events if e.kind == "checkpoint_loaded"}
    assert sorted(loads) == [0, 1, 2, 3]
    f = frame(events, 0, w, 700)
    for r, e in loads.items():
        same = e.weights == saved.weights
        assert same is not (changed and r == 3)
        t = f.text_with_key(f"load.{r}")
        assert t.text == f"{e.waited:.3f} s · {e.weights} {'=' if same else '≠'}", (w, r)
        assert t.color == (THEME.ok if same else THEME.bad)
    verdict = f.text_with_key("loads")
    mark = "✗" if changed else "✓"
    assert verdict.text == f"{mark} every rank loaded rank 0's weights"
    assert verdict.color == (THEME.bad if changed else THEME.ok)


def test_a_wide_stage_says_the_long_forms_of_the_same_comparisons() -> None:
    events = last_rank_loads_other_bytes(load_recording(FOUR))
    saved = next(e for e in events if e.kind == "checkpoint_saved")
    f = frame(events, 0, 1200, 700)
    for e in (e for e in events if e.kind == "checkpoint_loaded"):
        same = e.weights == saved.weights
        said = "= rank 0" if same else "≠ rank 0"
        expected = f"waited {e.waited:.3f} s · loaded CRC-32 {e.weights} {said}'s"
        assert f.text_with_key(f"load.{e.rank}").text == expected
    verdict = f.text_with_key("loads")
    assert verdict.text == f"✗ every rank loaded the weights rank 0 saved (CRC-32 {saved.weights})"


@pytest.mark.parametrize("phase", [0, 1, 2, 3])
def test_before_the_ranks_report_each_phase_says_it_waits_under_its_caption(phase) -> None:
    events = [e for e in load_recording(FOUR) if e.kind in {"recording", "run_started"}]
    events += [e for e in load_recording(FOUR) if e.kind == "rank_started"]
    f = frame(events, phase, 800, 600)
    waiting = [t for t in f.texts if t.text == "Waiting for the ranks…"]
    assert len(waiting) == 1
    (t,) = waiting
    assert t.color == THEME.muted
    others = [x for x in f.texts if x is not t]
    assert others  # the title and the caption above it
    lowest = max(x.box.bottom for x in others)
    assert lowest <= t.box.y <= lowest + t.font.px
    assert t.box.x == min(x.box.x for x in others)


def test_on_a_320_px_projector_gif_a_line_too_long_even_short_is_cut_where_it_must_be() -> None:
    # none of a line's forms fits: its last, shortest form, cut to the longest start that
    # still fits with its "…"
    events = load_recording(FOUR)
    saved = next(e for e in events if e.kind == "checkpoint_saved")
    lesson = lesson_of("resuming")
    ctx = SceneContext(320, 1000, load_theme("projector"), lesson.phase_text, estimate_width)
    f = stage_frame(record(events), Cursor(0, 0), 1.0, ctx, lesson.scene)
    room = 320 - 2 * max(ctx.base_px, ctx.min_px) * 0.6
    shortest = {
        "": "rank 0 saves → barrier → every rank loads",
        "saved.bytes": f"step {saved.step}: {saved.bytes:,} bytes",
        "loads": "✓ every rank loaded rank 0's weights",
    }
    for key, whole in shortest.items():
        (t,) = [t for t in f.texts if t.key == key and t.text[:8] == whole[:8]]
        assert estimate_width(whole, t.font) > room
        n = max(n for n in range(2, len(whole)) if estimate_width(whole[:n] + "…", t.font) <= room)
        assert t.text == whole[:n] + "…", key
