"""Seeded-bug survivor: the shares' note says "(first k of M places shown)" exactly when the
longest share is cut, never when every place fits. The stages of the other tests are far
narrower or far wider than the share; here the width is swept to the pixel where the last
place just fits, and the note is held against the cells actually drawn."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

FOUR = "evaluation-4-ranks.jsonl"
PLACES = 60  # every rank's share made this long: longer than a laptop's stage has room for


def _frame(events, w: int) -> StageFrame:
    lesson = lesson_of("evaluation")
    ctx = SceneContext(w, 1000, load_theme("light"), lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, 0), 1.0, ctx, lesson.scene)


def _events() -> list:
    out = []
    for e in load_recording(FOUR):
        if e.kind == "eval_share":
            e = dataclasses.replace(
                e,
                indices=[e.indices[i % len(e.indices)] for i in range(PLACES)],
                padding=[False] * PLACES,
                correct=[e.correct[i % len(e.correct)] for i in range(PLACES)],
            )
        out.append(e)
    return out


def _shown(f: StageFrame, ranks: int) -> int:
    cells = [s for s in f.shapes if s.kind == "rect" and s.fill]
    assert len(cells) % ranks == 0
    return len(cells) // ranks


def test_the_note_says_places_are_cut_exactly_when_a_place_is_left_out() -> None:
    events = _events()
    ranks = len([e for e in events if e.kind == "eval_share"])
    w = 640
    while _shown(_frame(events, w), ranks) < PLACES:  # coarse, then back to the last pixel cut
        w += 32
    w -= 32
    while _shown(_frame(events, w), ranks) < PLACES:
        w += 1
    cut, whole = _frame(events, w - 1), _frame(events, w)
    shown = _shown(cut, ranks)
    assert shown == PLACES - 1
    assert f"(first {shown} of {PLACES} places shown)" in cut.text_with_key("extra_rows").text
    assert "places shown" not in whole.text_with_key("extra_rows").text
