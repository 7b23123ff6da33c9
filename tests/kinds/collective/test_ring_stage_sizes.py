"""The ring stage across the sizes it is drawn at (a window from 420 px wide, GIFs from 320):
whatever the size, every rank's row of buffers is drawn, no text leaves the stage or covers
another; and where the cells narrow, they give up values one at a time (three, two, one, then
the count of ranks each copy sums), the columns' heads shorten to c0 only when "chunk 3" no
longer fits, and a cell of counts is no wider than twice the widest count. Values expected
from the raw events (pure, no Qt)."""

from __future__ import annotations

import itertools

import pytest

from ddp_viz.kinds.collective.model import contributions
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Font, estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.collective.test_ring_stage_says import thirds

LESSON = load_lesson("all-reduce")
RECORDINGS = {n: record(load_recording(f"ring-{n}-ranks.jsonl")) for n in (2, 4, 8)}


def frame(world: int, step: int, phase: int, w: float, h: float, theme: str = "light"):
    ctx = SceneContext(w, h, load_theme(theme), LESSON.phase_text, estimate_width)
    return stage_frame(RECORDINGS[world], Cursor(step, phase), 0.5, ctx, "ring")


def problems(f, world: int) -> list:
    out = []
    for t in f.texts:
        b = t.box
        if b.x < -0.5 or b.y < -0.5 or b.right > f.width + 0.5 or b.bottom > f.height + 0.5:
            out.append(("outside", t.text, b))
    # a chip in flight (layer 1) is meant to pass over the buffers
    out += [
        ("overlap", a.text, b.text) for a, b in f.overlapping_texts() if not (a.layer or b.layer)
    ]
    missing = [r for r in range(world) if f.text_with_key(f"rank{r}.chunk{world - 1}") is None]
    if missing:
        out.append(("rows missing", missing))
    return out


# light: every size from the smallest window up; a projector's 24 px type needs a stage tall
# enough for the rows (the rows under the bottom are left out, tests/kinds/collective/
# test_ring_layouts.py) and, at 8 ranks, 500 px or wider (narrower, eight counts at 24 px
# do not fit side by side: they overlap)
LIGHT = [(w, h) for w in range(420, 1921, 125) for h in (300, 390, 480, 600, 720, 900, 1080)]
PROJECTOR = [(w, h) for w in range(420, 1921, 150) for h in (420, 600, 800, 1080)]
SWEEP = [
    *[("light", world, w, h) for world in (2, 4, 8) for w, h in LIGHT],
    *[("projector", world, w, h) for world in (2, 4) for w, h in PROJECTOR],
    *[("projector", 8, w, h) for w in range(520, 1921, 200) for h in (800, 1080)],
]


@pytest.mark.parametrize("world", [2, 4, 8])
def test_at_every_size_every_row_is_drawn_inside_the_stage_and_apart(world) -> None:
    for theme, n, w, h in SWEEP:
        if n != world:
            continue
        for step, phase in ((1, 1), (2 * world - 3, 2)):
            f = frame(world, step, phase, w, h, theme)
            assert not problems(f, world), (theme, w, h, step, problems(f, world)[:3])


def state_after(world: int, step: int) -> list[list[list[float]]]:
    """Every rank's chunks after ring step ``step``, from the raw events."""
    events = load_recording(f"ring-{world}-ranks.jsonl")
    values = {e.rank: [list(h) for h in e.heads] for e in events if e.kind == "collective_input"}
    for s in range(step + 1):
        for e in events:
            if e.kind == "ring_step" and e.step == s:
                values[e.rank][e.received] = list(e.chunk)
    return [values[r] for r in range(world)]


def said(values: list[float], most: int) -> str:
    return " ".join(fmt(v, 3) for v in values[:most]) + (" …" if len(values) > most else "")


@pytest.mark.parametrize(
    ("world", "theme", "w", "most", "head"),
    [
        (4, "light", 330, 1, "chunk "),  # one value fits, and "chunk 3" over it
        (4, "light", 360, 2, "chunk "),
        (4, "light", 400, 3, "chunk "),
        (8, "light", 340, 0, "c"),  # not even one: the counts
        (8, "light", 420, 1, "c"),
        (4, "projector", 470, 0, "c"),
        (4, "projector", 560, 1, "c"),
        (4, "projector", 640, 1, "chunk "),
        (4, "projector", 700, 2, "chunk "),
    ],
)
def test_narrowing_cells_give_up_values_one_at_a_time_then_count(world, theme, w, most, head):
    state = state_after(world, 1)
    f = frame(world, 1, 2, w, 600, theme)
    assert [t.text for t in f.texts if t.text in {f"{head}{c}" for c in range(world)}] == [
        f"{head}{c}" for c in range(world)
    ]
    for r in range(world):
        for c in range(world):
            cell = f.text_with_key(f"rank{r}.chunk{c}")
            n = contributions(1, r, c, world)
            assert cell.value == n
            assert cell.text == (said(state[r][c], most) if most else f"{n}/{world}"), (r, c)


@pytest.mark.parametrize(("w", "binds"), [(420, False), (560, True), (640, True)])
def test_a_cell_of_counts_is_no_wider_than_twice_the_count(w, binds) -> None:
    # values of more digits than one fits a cell on a projector: the counts, with room over
    events = [thirds(e) for e in load_recording("ring-4-ranks.jsonl")]
    ctx = SceneContext(w, 600, load_theme("projector"), LESSON.phase_text, estimate_width)
    f = stage_frame(record(events), Cursor(1, 2), 1.0, ctx, "ring")
    cell = f.text_with_key("rank0.chunk0")
    assert cell.text == f"{contributions(1, 0, 0, 4)}/4"
    widest = estimate_width("4/4", Font(cell.font.px))
    fills = [s for s in f.shapes if s.key.startswith("rank") and s.fill]
    assert len(fills) == 16
    lefts = sorted({round(s.box.x, 3) for s in fills})
    steps = {round(b - a, 3) for a, b in itertools.pairwise(lefts)}
    assert len(steps) == 1  # evenly spaced columns
    (step,) = steps
    assert step <= 2 * widest + 1e-3
    assert (step == pytest.approx(2 * widest, abs=1e-2)) is binds


@pytest.mark.parametrize("world", [4, 8])
def test_the_buffers_type_grows_as_far_as_the_rows_fit_above_the_verdict(world) -> None:
    # a stage wide enough that only its height limits the type: the largest of 1.6, 1.4 and
    # 1.2 times the small type whose rows (a head and a row a rank, 1.25 lines each) fit
    # between the heads' top and the verdict's line (1.5 lines of the small type)
    for h in range(280, 690, 10):
        ctx = SceneContext(1900, h, load_theme("light"), LESSON.phase_text, estimate_width)
        small = max(ctx.min_px, max(ctx.base_px, ctx.min_px) * 0.9)
        f = stage_frame(RECORDINGS[world], Cursor(1, 2), 1.0, ctx, "ring")
        top = next(t for t in f.texts if t.text in ("chunk 0", "c0")).box.y
        below = h - top - small * 1.3 * 1.5
        rows = (world + 1) * 1.3 * 1.25
        scale = next((s for s in (1.6, 1.4, 1.2) if rows * small * s <= below), 1.0)
        assert f.text_with_key("rank0.chunk0").font.px == pytest.approx(small * scale), h
    assert scale == 1.6  # the tallest of them has room for the largest


@pytest.mark.parametrize("h", [240, 260, 280, 300])
def test_a_short_stage_leaves_out_the_last_rows_rather_than_draw_past_its_bottom(h) -> None:
    f = frame(4, 1, 2, 520, h, "projector")
    drawn = [r for r in range(4) if f.text_with_key(f"rank{r}.chunk3") is not None]
    assert drawn == list(range(len(drawn))) and 1 <= len(drawn) < 4, drawn
    assert all(t.box.bottom <= h + 0.5 for t in f.texts), h
    assert all(s.box.bottom <= h + 0.5 for s in f.shapes if s.key.startswith("rank")), h
