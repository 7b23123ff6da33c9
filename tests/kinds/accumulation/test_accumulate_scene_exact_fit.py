"""The accumulation stage's longer words at exactly the room there is, and a hair either side:
the long title (measured in its bold type) and "(all in ddp-viz run's report)" after the count
of ranks left out. A measure that gives the one text a chosen width (every other text estimated
as usual) puts it exactly at the edge, which no whole-pixel stage size reaches with the
estimate (pure, no Qt)."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Font, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

THEME = load_theme("light")
LESSON = load_lesson("accumulate-with-no-sync")
LONG = "Step 1 of 3 · 3 · what DDP synchronised"
SHORT = "Step 1/3 · all-reduces"


def room(w: float, h: float) -> float:
    """The stage's width less a margin each side (0.6 of its base type)."""
    ctx = SceneContext(w, h, THEME, LESSON.phase_text, estimate_width)
    return w - 2 * max(ctx.base_px, ctx.min_px) * 0.6


def frame(name: str, w: float, h: float, text: str, width):  # type: ignore[no-untyped-def]
    def measure(t: str, font: Font) -> float:
        return width(font) if t == text else estimate_width(t, font)

    ctx = SceneContext(w, h, THEME, LESSON.phase_text, measure)
    rec = record(load_recording(name))
    return stage_frame(rec, Cursor(0, 2), 1.0, ctx, "accumulation")


@pytest.mark.parametrize(("over", "shown"), [(0.0, LONG), (-0.5, LONG), (0.5, SHORT)])
def test_the_long_title_is_said_while_it_fits_exactly(over, shown) -> None:
    w, h = 900, 720
    edge = room(w, h)
    f = frame("accumulate-3-micro.jsonl", w, h, LONG, lambda font: edge + over)
    assert f.texts[0].text == shown
    assert f.texts[0].font.bold


@pytest.mark.parametrize(("over", "said"), [(0.0, True), (-0.5, True), (0.5, False)])
def test_where_the_other_ranks_are_is_said_while_it_fits_exactly(over, said) -> None:
    w, h = 560, 200  # 8 ranks: rank 0 alone fits, 7 are counted
    count = "+ 7 more ranks"
    whole = count + " (all in ddp-viz run's report)"
    edge = room(w, h)
    f = frame("accumulate-8-ranks.jsonl", w, h, whole, lambda font: edge + over)
    more = f.text_with_key("more_ranks")
    assert more.value == 7
    assert more.text == (whole if said else count)
