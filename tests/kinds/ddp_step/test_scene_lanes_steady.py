"""The DDP step stage's lanes keep their type through a step: it is sized for the tightest of
the step's phases, so the rank labels and numbers do not grow and shrink as the captions and
checks come and go; and whatever the phase, nothing leaves the stage or overlaps."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart

SIZES = [(1280, 800), (900, 420), (700, 330), (1800, 1000), (600, 260)]


@pytest.mark.parametrize(
    ("name", "theme"),
    [
        ("four-ranks-3-steps.jsonl", "light"),
        ("uneven-3-ranks.jsonl", "light"),
        ("mlp-2-ranks-3-steps.jsonl", "projector"),
        ("every-parameter-8-ranks.jsonl", "light"),
    ],
)
def test_the_lanes_type_holds_through_the_step(name, theme) -> None:
    rec = record(load_recording(name))
    th = load_theme(theme)
    for w, h in SIZES:
        if theme == "projector" and w < 700:
            continue  # far below a projector's stage: its floor cannot hold there anyway
        ctx = SceneContext(w, h, th, load_lesson().phase_text, estimate_width)
        sizes = set()
        for phase in (1, 2, 3):
            for progress in (0.0, 0.5, 1.0):
                f = stage_frame(rec, Cursor(0, phase), progress, ctx)
                assert_inside_and_apart(f)
                labels = [t for t in f.texts if t.text == f"rank {rec.world_size - 1}"]
                assert len(labels) == 1
                sizes.add(round(labels[0].font.px, 6))
        assert len(sizes) == 1, (w, h, sizes)
