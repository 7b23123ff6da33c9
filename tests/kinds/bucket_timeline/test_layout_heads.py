"""buckets' two layout headings on narrow projector stages (issue 47: "from step 2 on, in
all-reduce …" at 1280×800 with the lesson column shown, Ctrl+L): shorter words, never a cut
that hides the order the heading is about."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart


@pytest.mark.parametrize("width", [700, 799, 893, 1000, 1341])
def test_the_layout_headings_say_step_2_in_all_reduce_order_whole(width: int) -> None:
    info = load_lesson("buckets")
    rec = record(load_recording("buckets-lesson-2-ranks.jsonl"))
    ctx = SceneContext(width, 560, load_theme("projector"), info.phase_text, estimate_width)
    for step in (0, 1):  # the current layout in bold: step 1's, then the rebuilt one
        frame = stage_frame(rec, Cursor(step, 0), 1.0, ctx, info.scene)
        assert_inside_and_apart(frame)
        heads = [t.text for t in frame.texts if t.text.startswith(("step", "from step"))]
        assert heads, (width, [t.text for t in frame.texts])
        second = heads[-1]
        assert "2 on" in second and not second.endswith("…"), (width, second)
        if width >= 893:  # the lesson column's stage at 1280×800: the order is named
            assert "all-reduce order" in second, (width, second)
