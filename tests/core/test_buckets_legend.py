"""The buckets stage says what its black vertical line is (issue 33, item 8): where each
rank's backward produced its last gradient, drawn in the last phase without a word."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart


@pytest.mark.parametrize(("w", "h", "theme"), [(560, 480, "light"), (893, 495, "projector")])
def test_the_black_line_is_in_the_legend(w, h, theme) -> None:
    rec = record(load_recording("buckets-lesson-2-ranks.jsonl"))
    lesson = load_lesson("buckets")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    frame = stage_frame(rec, Cursor(2, 3), 1.0, ctx, "bucket_timeline")
    text = " ".join(frame.all_text().split())
    assert "black line: backward's last gradient" in text
    assert_inside_and_apart(frame)
