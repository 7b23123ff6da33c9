"""The buckets stage draws every rank of an 8-rank run (issue 47, 6): at 1920×1080 it dropped
ranks 5-7, at 1280×800 all but ranks 0-1 ("ranks 2–7: stage too short"). Every phase of a
real 8-rank recording, at the stage sizes of a laptop and a projector (pure frames)."""

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


@pytest.mark.parametrize("stage", list(STAGES))
def test_every_rank_of_eight_is_on_the_buckets_stage(stage: str) -> None:
    theme, width, height = STAGES[stage]
    info = load_lesson("buckets")
    ctx = SceneContext(width, height, load_theme(theme), info.phase_text, estimate_width)
    rec = record(load_recording("buckets-lesson-8-ranks.jsonl"))
    assert rec.world_size == 8
    for cursor in walk(rec.complete_prefix()):
        for progress in (0.0, 1.0):
            frame = stage_frame(rec, cursor, progress, ctx, info.scene)
            texts = [t.text for t in frame.texts]
            assert not any("stage too short" in t for t in texts), (cursor, texts)
            assert_inside_and_apart(frame)
            keys = {s.key for s in frame.shapes}
            for r in range(8):
                assert f"rank {r}" in texts, (stage, cursor, r)
                if cursor.phase >= 2 or (cursor.phase == 1 and progress == 1.0):
                    assert f"rank{r}.backward" in keys, (stage, cursor, r)
                if cursor.phase >= 2 and progress == 1.0:
                    spans = rec.steps[cursor.step].ranks[r].bucket_spans
                    want = {f"rank{r}.bucket{b['index']}" for b in spans}
                    assert want <= keys, (stage, cursor, r)
            # nothing drawn past the time axis's right end
            assert all(s.box.right <= frame.width + 0.5 for s in frame.shapes if s.kind == "rect")
