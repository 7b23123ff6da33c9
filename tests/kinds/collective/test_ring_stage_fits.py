"""The ring stage's longer words are said when they fit the stage's width less its margins, and
only then: the closing title (measured in its bold type), the verdict and the line under the
buffers, each on either side of the edge and exactly at it. A measure that gives the one text
a chosen width (every other text estimated as usual) puts that text where the test wants it
(pure, no Qt)."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Font, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

THEME = load_theme("light")
LESSON = load_lesson("all-reduce")
REC = record(load_recording("ring-4-ranks.jsonl"))
TITLE, SHORT_TITLE = "After the ring: what each algorithm cost", "What it cost"
LONG_OK = "✓ every rank holds the whole sum, equal to dist.all_reduce bit for bit"
MID_OK, SHORT_OK = "✓ equal to dist.all_reduce, bit for bit", "✓ = dist.all_reduce"
NOTE = "colour: the chunk's owner · fuller: the copy adds up more ranks' vectors"


def margins(w: float, h: float) -> tuple[float, float]:
    """The stage's width less a margin each side, and the margin."""
    ctx = SceneContext(w, h, THEME, LESSON.phase_text, estimate_width)
    pad = max(ctx.base_px, ctx.min_px) * 0.6
    return w - 2 * pad, pad


def frame(step: int, phase: int, w: float, h: float, text: str, width, others=None):
    """The frame where ``text`` measures ``width(font)`` (each of ``others`` its own width)
    and every other text as estimated."""
    widths = {**(others or {}), text: width}

    def measure(t: str, font: Font) -> float:
        return widths[t](font) if t in widths else estimate_width(t, font)

    ctx = SceneContext(w, h, THEME, LESSON.phase_text, measure)
    return stage_frame(REC, Cursor(step, phase), 1.0, ctx, "ring")


W, H = 640, 480  # a stage where each of them needs about the room there is


@pytest.mark.parametrize(
    ("over", "shown"),
    [
        (0.0, TITLE),  # exactly the room: it fits
        (-0.5, TITLE),
        (0.5, SHORT_TITLE),
    ],
)
def test_the_closing_title_is_the_long_one_while_it_fits(over, shown) -> None:
    room, pad = margins(W, H)
    for near in (over, over * pad):
        f = frame(5, 3, W, H, TITLE, lambda font, near=near: room + near)
        assert f.texts[0].text == shown, near


def test_the_title_is_measured_in_the_bold_type_it_is_drawn_in() -> None:
    room, _ = margins(W, H)

    def width(font: Font) -> float:  # bold type is wider: past the edge only in bold
        return room + 1.0 if font.bold else room - 1.0

    f = frame(5, 3, W, H, TITLE, width)
    assert f.texts[0].text == SHORT_TITLE
    assert f.texts[0].font.bold


@pytest.mark.parametrize(
    ("over", "shown"),
    [(0.0, MID_OK), (-0.5, MID_OK), (0.5, SHORT_OK)],
)
def test_the_verdict_is_the_longest_that_fits(over, shown) -> None:
    room, pad = margins(W, H)
    for near in (over, over * pad):
        long = {LONG_OK: lambda font: room + 2 * pad}  # the longest: past the edge
        f = frame(5, 2, W, H, MID_OK, lambda font, near=near: room + near, long)
        assert f.text_with_key("verdict").text == shown, near


@pytest.mark.parametrize(("over", "shown"), [(0.0, True), (-0.5, True), (0.5, False)])
def test_the_line_under_the_buffers_is_said_while_it_fits(over, shown) -> None:
    room, pad = margins(W, H)
    for near in (over, over * pad):
        f = frame(1, 2, W, H, NOTE, lambda font, near=near: room + near)
        assert any(s.kind == "ellipse" for s in f.shapes)  # the ring is drawn: one line to say
        notes = [t for t in f.texts if t.text == NOTE]
        assert len(notes) == shown, near
        if shown:
            assert notes[0].color == THEME.muted
