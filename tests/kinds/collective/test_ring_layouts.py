"""The ring stage at the sizes it meets (a laptop's window, a narrow column, a projector):
where the ring goes against the buffers, what the cells say when their values do not fit (the
count of ranks each copy sums, from the schedule), the columns' heads, the line under them,
and a cell's ink against its fill."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.collective.model import contributions
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
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


@pytest.mark.parametrize(
    ("w", "title"),
    [
        (800, "Ring step 4 of 6 · all-gather · 1 · each rank picks a chunk"),
        (600, "Ring step 4 of 6 · all-gather · picks"),
        (400, "Ring step 4 of 6 · all-gather"),
        (300, "Step 4/6 · all-gather"),
    ],
)
def test_the_title_keeps_the_step_and_its_half_as_the_stage_narrows(w: int, title: str) -> None:
    _, f = frame(FOUR, 3, 0, w=w, h=600)
    assert [t.text for t in f.texts if t.text.startswith(("Ring step", "Step "))] == [title]


def test_the_charts_wait_for_the_results_and_the_ring_stays_until_then() -> None:
    events = [e for e in load_recording(FOUR) if e.kind != "collective_result"]
    rec = record(events)
    lesson = load_lesson("all-reduce")
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    f = stage_frame(rec, Cursor(5, 3), 1.0, ctx, "ring")
    assert "After the ring: what each algorithm cost" not in f.all_text()
    assert f.text_with_key("rank3.chunk3") is not None
    assert not [t for t in f.texts if t.key == "verdict"]  # no results: no verdict yet
    assert not [s for s in f.shapes if s.key.startswith(("bar.", "time."))]


def test_a_run_of_another_kind_on_the_ring_stage_says_what_to_do() -> None:
    rec = record(load_recording("default-run.jsonl"))
    lesson = load_lesson("all-reduce")
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    f = stage_frame(rec, Cursor(0, 0), 1.0, ctx, "ring")
    assert [t.text for t in f.texts] == ["This lesson shows a collective run: press Run."]
