"""The ring stage at the sizes it meets (a laptop's window, a narrow column, a projector):
where the ring goes against the buffers, what the cells say when their values do not fit (the
count of ranks each copy sums, from the schedule), the columns' heads, the line under them,
and a cell's ink against its fill."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.collective.model import contributions
from ddp_viz.model.theme import load_theme
from tests.frames import assert_inside_and_apart
from tests.kinds.collective.test_ring_scene import EIGHT, FOUR, frame

NOTE = "colour: the chunk's owner · fuller: the copy adds up more ranks' vectors"


def ring_box(f):
    circles = [s.box for s in f.shapes if s.kind == "ellipse"]
    return min(b.x for b in circles), min(b.y for b in circles), max(b.right for b in circles)


def test_a_wide_stage_has_the_ring_left_of_the_buffers() -> None:
    _, f = frame(FOUR, 1, 2, w=800, h=300)
    left, _, right = ring_box(f)
    assert left >= 0
    cell = f.text_with_key("rank0.chunk0")
    assert right < cell.box.x
    assert f.text_with_key("rank0.chunk0").box.y < f.height / 2
    assert [t.text for t in f.texts if t.text.startswith("chunk ")] == [
        f"chunk {c}" for c in range(4)
    ]
    assert_inside_and_apart(f)


def test_a_narrow_stage_has_the_buffers_across_the_top_and_the_ring_under_them() -> None:
    _, f = frame(FOUR, 1, 2, w=400, h=400)
    _, top, _ = ring_box(f)
    last_row = f.text_with_key("rank3.chunk3")
    assert last_row.box.bottom <= top
    assert_inside_and_apart(f)


@pytest.mark.parametrize(
    ("name", "w", "h", "note"),
    [
        (FOUR, 600, 300, NOTE),
        (FOUR, 400, 300, "each rank sends its outlined chunk to rank + 1"),
        (EIGHT, 600, 300, "each rank sends its outlined chunk to rank + 1"),
        (FOUR, 300, 300, "outlined: sent"),
    ],
)
def test_the_line_under_the_buffers_says_what_the_picture_cannot(name, w, h, note) -> None:
    _, f = frame(name, 1, 2, w=w, h=h)
    ring = any(s.kind == "ellipse" for s in f.shapes)
    assert ring == (note == NOTE)
    said = [t for t in f.texts if t.text == note]
    assert len(said) == 1 and said[0].color == load_theme("light").muted


def test_narrow_columns_are_headed_c0_c1() -> None:
    _, f = frame(FOUR, 1, 2, w=300, h=400)
    heads = [t.text for t in f.texts if t.text in {f"c{c}" for c in range(4)}]
    assert heads == ["c0", "c1", "c2", "c3"]
    assert not [t for t in f.texts if t.text.startswith("chunk ")]


@pytest.mark.parametrize("name", [FOUR, EIGHT])
def test_cells_too_narrow_for_values_count_the_ranks_each_copy_sums(name) -> None:
    rec, _ = frame(name, 0, 0)
    world = rec.world_size
    for step in range(2 * (world - 1)):
        _, f = frame(name, step, 2, w=300, h=300, theme="projector")
        for r in range(world):
            for c in range(world):
                cell = f.text_with_key(f"rank{r}.chunk{c}")
                if cell is None:  # rows under the stage's bottom are not drawn
                    assert r > 0
                    continue
                n = contributions(step, r, c, world)
                assert cell.text == f"{n}/{world}" and cell.value == n


@pytest.mark.parametrize("name", [FOUR, EIGHT])
def test_a_cell_is_filled_by_how_many_ranks_it_sums_and_its_ink_stays_readable(name) -> None:
    theme = load_theme("light")
    rec, _ = frame(name, 0, 0)
    world = rec.world_size
    for step in (0, world - 2, 2 * (world - 1) - 1):
        _, f = frame(name, step, 2, w=1800, h=1200)
        for r in range(world):
            for c in range(world):
                key = f"rank{r}.chunk{c}"
                n = contributions(step, r, c, world)
                fill = next(s for s in f.shapes if s.key == key and s.fill)
                alpha = int(40 + 200 * (n - 1) / (world - 1))
                assert fill.fill_alpha == alpha
                ink = f.text_with_key(key).color
                assert ink == (theme.panel if alpha > 150 else theme.text), (step, key)
