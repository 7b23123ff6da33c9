"""every-parameter at 2 ranks on a projector (issue 47: 18.4 px labels in the window at
1280×800 while the rest of projector mode is 24 px and more). A row for each tensor left the
lanes' words under the floor for want of width (10–18 px); now the tensors take turns there
too, one a turn, and every tensor's recorded value still shows in its turn. Expected values
come from the recording's raw JSON (tests/core/test_tensor_turns.raw_values)."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import fmt
from ddp_viz.model.scenes import stage_frame
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.core.test_tensor_turns import TENSORS, ctx, raw_values
from tests.frames import assert_inside_and_apart

TWO = "mlp-2-ranks-3-steps.jsonl"
# the stage in the window: projector at 1280×800 (measured 889×460) and at 1920×1080
# (measured 1341×673); the least type each reaches (1280×800: the numbers' columns and the
# rank's rows at 24 px leave the labels 21.9 px, from 10.2)
STAGES = {(889, 460): 21.5, (889, 495): 21.5, (1341, 673): 24.0}


@pytest.mark.parametrize("size", list(STAGES))
def test_two_ranks_on_a_projector_at_its_type_every_tensor_in_turn(size) -> None:
    rec = record(load_recording(TWO))
    assert rec.world_size == 2 and [p.name for p in rec.params] == TENSORS
    want, scene = raw_values(TWO), load_lesson("every-parameter").scene
    for step in (0, 2):  # values differ between the steps
        seen: set[str] = set()
        for page in range(len(TENSORS)):
            for phase in range(4):
                for progress in (0.5, 1.0):
                    f = stage_frame(rec, Cursor(step, phase), progress, ctx(*size, page), scene)
                    assert f.smallest_px() >= STAGES[size], (size, page, phase, f.smallest_px())
                    assert_inside_and_apart(f)
                    for t in f.texts:
                        if t.value is None or t.key.endswith(".loss"):
                            continue
                        assert t.value == pytest.approx(want[(step, t.key)], rel=1e-6)
                        assert t.text == fmt(t.value), (t.key, t.text)
                        seen.add(t.key)
        for r in range(2):
            for kind in ("local", "averaged", "params"):
                for name in TENSORS:
                    assert f"rank{r}.{kind}.{name}" in seen, (size, step, r, kind, name)
