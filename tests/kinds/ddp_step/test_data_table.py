"""The DDP step stage's data table, for runs computed by hand (tests/frames.linear_run): down the
left on a wide stage, as many rows as fit and the count of the rest; across the top on a narrow
one, every row in reading order; folded away when neither leaves the numbers readable. Each
row says its number from 1 and its x, y."""

from __future__ import annotations

import re

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor
from tests.frames import assert_inside_and_apart, linear_run


def frame_of(world: int, rows: int, w: int, h: int, theme: str = "light"):
    rec = linear_run(world, rows=rows)
    ctx = SceneContext(w, h, load_theme(theme), load_lesson().phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(0, 0), 1.0, ctx)


def cells(frame) -> list:
    return [t for t in frame.texts if t.font.mono and re.match(r"^\d+: ", t.text)]


def expected(rows: int) -> list[str]:
    # linear_run's rows: x = 1, 2, …; y = 2x + 1
    return [f"{i + 1}: {i + 1:g}, {2 * (i + 1) + 1:g}" for i in range(rows)]


@pytest.mark.parametrize(("w", "h"), [(1280, 720), (889, 495)])
def test_a_long_table_down_the_left_shows_what_fits_and_counts_the_rest(w, h) -> None:
    _, f = frame_of(3, 30, w, h)
    shown = [t.text for t in cells(f)]
    assert 0 < len(shown) < 30
    assert shown == expected(30)[: len(shown)]
    more = [t.text for t in f.texts if re.fullmatch(r"\+\d+ more", t.text)]
    assert more == [f"+{30 - len(shown)} more"]
    xs = {round(t.box.cx) for t in cells(f)}
    assert len(xs) == 1  # one column, row under row
    assert_inside_and_apart(f)


@pytest.mark.parametrize(("w", "h", "theme"), [(560, 480, "light"), (889, 495, "projector")])
def test_a_narrow_stage_lays_every_row_across_the_top_in_reading_order(w, h, theme) -> None:
    _, f = frame_of(2, 8, w, h, theme)
    rows = cells(f)
    assert [t.text for t in rows] == expected(8)
    lines = sorted({round(t.box.y) for t in rows})
    assert 1 <= len(lines) <= 2
    order = sorted(rows, key=lambda t: (round(t.box.y), t.box.x))
    assert [t.text for t in order] == expected(8)
    lanes_top = min(
        s.box.y for s in f.shapes if s.kind == "rrect" and s.radius == 6 and s.fill_alpha == 22
    )
    assert max(t.box.bottom for t in rows) <= lanes_top
    assert not [t for t in f.texts if t.text.endswith(" more")]
    assert_inside_and_apart(f)


def test_too_many_rows_for_either_fold_the_table_away() -> None:
    _, f = frame_of(2, 30, 560, 480)
    assert cells(f) == [] and "data (x, y)" not in [t.text for t in f.texts]
    assert_inside_and_apart(f)
