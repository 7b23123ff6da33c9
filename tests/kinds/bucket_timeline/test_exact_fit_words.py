"""The buckets stage's headings at exactly the room they have, and a hair either side: the
norms panel's heading (the stage's width less its margins) and the rebuilt layout's heading
(its column). A measure that gives the one text a chosen width (every other text estimated as
usual) puts it exactly at the edge, which no whole-pixel stage size reaches with the estimate
(pure, no Qt)."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Font, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

REC = record(load_recording("buckets-lesson-2-ranks.jsonl"))
THEME = load_theme("light")
PHASE_TEXT = load_lesson("buckets").phase_text
W, H = 1280, 720
NORMS = (
    "‖∇‖ of each tensor: thin bars = each rank's local gradient (before the all-reduce), "
    "thick blue = the average every rank got"
)
NORMS_SHORT = "‖∇‖ per tensor: thin = each rank's local, thick blue = the average"
REBUILT = "from step 2 on, in all-reduce order"
REBUILT_SHORT = "step 2 on, in all-reduce order"


def pad() -> float:
    ctx = SceneContext(W, H, THEME, PHASE_TEXT, estimate_width)
    return max(ctx.base_px, ctx.min_px) * 0.6


def frame(phase: int, text: str, width: float):  # type: ignore[no-untyped-def]
    def measure(t: str, font: Font) -> float:
        return width if t == text else estimate_width(t, font)

    ctx = SceneContext(W, H, THEME, PHASE_TEXT, measure)
    return stage_frame(REC, Cursor(1, phase), 1.0, ctx, "bucket_timeline")


@pytest.mark.parametrize(("over", "shown"), [(0.0, NORMS), (-0.5, NORMS), (0.5, NORMS_SHORT)])
def test_the_norms_heading_is_the_long_one_while_it_fits_exactly(over, shown) -> None:
    room = W - 2 * pad()
    head = frame(3, NORMS, room + over).text_with_key("grads.head")
    assert head.box.x == pytest.approx(pad())  # the panel spans the stage less its margins
    assert head.text == shown


@pytest.mark.parametrize(("over", "shown"), [(0.0, REBUILT), (-0.5, REBUILT), (0.5, REBUILT_SHORT)])
def test_the_rebuilt_layouts_heading_is_the_long_one_and_whole_while_it_fits(over, shown) -> None:
    p = pad()
    col_w = (W - 2 * p - p) / 2
    f = frame(0, REBUILT, col_w + over)
    right = [t for t in f.texts if t.box.x == pytest.approx(p + col_w + p) and t.font.bold]
    assert right, [t.text for t in f.texts]
    assert right[0].text == shown  # whole: no " …" after it
