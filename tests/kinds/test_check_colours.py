"""Each check on the stage in its own colour, for every kind: a passing check (✓) is never
drawn in the failure colour, a failing one (✗) never in the passing colour, and no one text
holds two checks (which could only share one colour: '✓ all ranks equal' took the red of the
'✗ average ≠ full batch' beside it). Every phase of every recording, laptop and projector."""

from __future__ import annotations

import pytest

from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import walk
from tests.kinds.test_conformance import STAGES, _records, kind_ids, lesson_of

MARKS = ("✓", "✗")


@pytest.mark.parametrize("stage", ["laptop 1280×800", "projector 1920×1080"])
@pytest.mark.parametrize("kind_id", kind_ids())
def test_every_check_has_its_own_colour(kind_id: str, stage: str) -> None:
    theme_name, width, height = STAGES[stage]
    theme = load_theme(theme_name)
    lesson = lesson_of(kind_id)
    ctx = SceneContext(width, height, theme, lesson.phase_text, estimate_width)
    for name, rec in _records(kind_id):
        for cursor in walk(max(1, rec.complete_prefix())):
            frame = stage_frame(rec, cursor, 1.0, ctx, lesson.scene)
            for t in frame.texts:
                marks = sum(t.text.count(m) for m in MARKS)
                assert marks <= 1, (name, cursor, t.text)
                if "✓" in t.text:
                    assert t.color != theme.bad, (name, cursor, t.text)
                if "✗" in t.text:
                    assert t.color != theme.ok, (name, cursor, t.text)
