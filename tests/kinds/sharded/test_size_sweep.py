"""sharded at every stage size a window gives, laptop and projector type: no text off the
stage or over another (issue 47: a sweep found 18 frames that were, the holds table at a
520×440 projector stage and the backward table's columns at 600×900)."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import record, walk
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart

WIDTHS = (520, 600, 700, 889, 1341, 1920)
HEIGHTS = (440, 600, 900)


@pytest.mark.parametrize("name", ["sharded-2-ranks.jsonl", "sharded-4-ranks.jsonl"])
@pytest.mark.parametrize("theme", ["light", "projector"])
def test_every_frame_stays_on_the_stage_at_every_size(name: str, theme: str) -> None:
    info = load_lesson("sharded")
    rec = record(load_recording(name))
    cursors = list(walk(min(2, rec.complete_prefix())))  # the steps draw alike
    for w in WIDTHS:
        for h in HEIGHTS:
            ctx = SceneContext(w, h, load_theme(theme), info.phase_text, estimate_width)
            for cursor in cursors:
                for progress in (0.5, 1.0):
                    frame = stage_frame(rec, cursor, progress, ctx, info.scene)
                    try:
                        assert_inside_and_apart(frame)
                    except AssertionError as e:
                        raise AssertionError((w, h, cursor, progress, *e.args)) from None
