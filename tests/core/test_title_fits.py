"""A long stage title (issue 47, 11: buckets' "Step 10 of 20 · 2 · backward: …" touched the
right edge). The stage draws type at whole pixels, so a title shrunk to 27.6 px was drawn at
28 and ran up to 13.7 px past its room; on a projector it shrank to 13 px. A title is drawn at
a whole-pixel size that fits, and never under the projector's floor: it takes two lines."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Font, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording


def drawn(text: str, font: Font) -> float:
    """Widths as the stage's FontBook measures them: at the whole-pixel size it draws."""
    return estimate_width(text, Font(max(1, round(font.px)), font.bold, font.mono))


@pytest.mark.parametrize(
    ("lesson", "name"),
    [("buckets", "buckets-lesson-2-ranks.jsonl"), ("ddp-pattern", "default-run.jsonl")],
)
@pytest.mark.parametrize("theme", ["light", "projector"])
def test_a_long_title_stays_inside_the_stage_in_readable_type(lesson, name, theme) -> None:
    info = load_lesson(lesson)
    rec = record(load_recording(name))
    floor = 24 if theme == "projector" else 11
    for width in range(420, 1000, 7):
        ctx = SceneContext(width, 470, load_theme(theme), info.phase_text, drawn)
        margin = max(ctx.base_px, ctx.min_px) * 0.6  # the stage's pad
        for phase in range(4):
            frame = stage_frame(rec, Cursor(rec.complete_prefix() - 1, phase), 1.0, ctx, info.scene)
            title = [t for t in frame.texts if t.font.bold and t.box.y < ctx.height * 0.25]
            assert title and title[0].text.startswith("Step "), (width, phase)
            words = " ".join(t.text for t in title)
            assert "Step" in words and str(rec.complete_prefix()) in words
            for t in title:
                right = t.box.x + drawn(t.text, t.font)
                assert right <= width - margin * 0.5, (width, phase, t.text, right)
                assert round(t.font.px) >= floor, (width, phase, t.text, t.font.px)
