"""The DDP step stage's data table down the left never hides one row behind a "+1 more" line:
that line takes a row's place, so when the last row is the only one left it is drawn instead.
(A seeded bug that hid the last row whenever the rows exactly filled the table passed every
test: no fixture had as many rows as fit.)"""

from __future__ import annotations

import re

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor
from tests.frames import linear_run


def table(world: int, rows: int, w: int, h: int) -> tuple[list[str], list[str]]:
    rec = linear_run(world, rows=rows)
    ctx = SceneContext(w, h, load_theme("light"), load_lesson().phase_text, estimate_width)
    f = stage_frame(rec, Cursor(0, 0), 1.0, ctx)
    cells = [t.text for t in f.texts if t.font.mono and re.match(r"^\d+: ", t.text)]
    more = [t.text for t in f.texts if re.fullmatch(r"\+\d+ more", t.text)]
    return cells, more


@pytest.mark.parametrize(("w", "h"), [(1280, 720), (889, 495)])
def test_the_table_shows_every_row_that_fits_and_never_one_behind_a_more_line(w, h) -> None:
    seen_whole, seen_cut = 0, 0
    for rows in range(3, 31):
        cells, more = table(3, rows, w, h)
        if not cells:
            continue  # folded away
        # each row its number from 1 and its x, y (linear_run: x = i, y = 2x + 1)
        want = [f"{i}: {i:g}, {2 * i + 1:g}" for i in range(1, rows + 1)]
        assert cells == want[: len(cells)], rows
        if not more:
            assert len(cells) == rows, rows
            seen_whole += 1
            continue
        hidden = int(more[0][1:].split()[0])
        assert len(cells) + hidden == rows, rows
        # the "+k more" line stands in for one row: for k = 1 the row itself fits there
        assert hidden >= 2, f"{rows} rows: '{more[0]}' hides a row that fits in its place"
        seen_cut += 1
    assert seen_whole and seen_cut  # both sides of the boundary were met
