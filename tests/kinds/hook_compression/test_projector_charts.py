"""comm-hooks' loss and bytes charts, the lesson's one picture, stay on a projector at
1280×800 (issue 47, 8: they were gone, leaving ~130 px blank), at every phase of every step."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import record, walk
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart
from tests.kinds.test_conformance import STAGES

# the stage in the real window at 1280×800 in projector mode measured 889×460
SIZES = {**STAGES, "projector 1280×800, measured": ("projector", 889, 460)}


@pytest.mark.parametrize("stage", list(SIZES))
def test_the_loss_and_bytes_charts_are_on_every_stage(stage: str) -> None:
    theme, width, height = SIZES[stage]
    info = load_lesson("comm-hooks")
    ctx = SceneContext(width, height, load_theme(theme), info.phase_text, estimate_width)
    rec = record(load_recording("comm-hooks-14-steps.jsonl"))
    for cursor in walk(rec.complete_prefix()):
        frame = stage_frame(rec, cursor, 1.0, ctx, info.scene)
        assert_inside_and_apart(frame)
        if cursor.phase == 2 and frame.text_with_key("factors.title"):
            # P and Q's own phase: where no room is left beside the table they stand in the
            # charts' place (tests/kinds/hook_compression/test_gif_frames.py)
            continue
        for which in ("loss", "bytes"):
            assert frame.text_with_key(f"chart.{which}") is not None, (stage, cursor, which)
        if cursor.step > 0:  # and their lines, from step 2 on
            assert sum(s.kind == "line" and s.width == 2 for s in frame.shapes) >= 6, stage
