"""The ring itself, measured: the ranks sit clockwise from the top (rank 1 is to the right of
rank 0, as "its right-hand neighbour" says), evenly around one circle, each link a chord to the
next rank; a chip in flight sits three quarters of an em to the right of its direction of
travel, so the two chips on a two-rank ring's one link pass each other (pure, no Qt)."""

from __future__ import annotations

import math

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

LESSON = load_lesson("all-reduce")


def frame(world: int, step: int, phase: int, progress: float = 0.5, w=1280, h=720):
    rec = record(load_recording(f"ring-{world}-ranks.jsonl"))
    ctx = SceneContext(w, h, load_theme("light"), LESSON.phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(step, phase), progress, ctx, "ring")


def centres(f) -> dict[int, tuple[float, float]]:
    """Each rank's node: the circle around its bold number."""
    numbers = {int(t.text): t.box for t in f.texts if t.text.isdigit() and t.font.bold}
    circles = [s.box for s in f.shapes if s.kind == "ellipse"]
    out = {}
    for r, box in numbers.items():
        c = next(c for c in circles if c.contains(box, 8))
        out[r] = (c.cx, c.cy)
    return out


@pytest.mark.parametrize("world", [2, 4, 8])
def test_the_ranks_sit_clockwise_from_the_top_evenly_round_one_circle(world) -> None:
    _, f = frame(world, 1, 1)
    at = centres(f)
    assert sorted(at) == list(range(world))
    cx = sum(x for x, _ in at.values()) / world
    cy = sum(y for _, y in at.values()) / world
    radius = math.dist(at[0], (cx, cy))
    for r, (x, y) in at.items():
        assert math.dist((x, y), (cx, cy)) == pytest.approx(radius, rel=1e-6)
        # clockwise on the screen (y grows downwards), from straight above the centre
        angle = -math.pi / 2 + 2 * math.pi * r / world
        assert x == pytest.approx(cx + radius * math.cos(angle), abs=1e-6), r
        assert y == pytest.approx(cy + radius * math.sin(angle), abs=1e-6), r
    if world >= 4:  # rank 1 to the right of rank 0, the last rank to its left
        assert at[1][0] > at[0][0] > at[world - 1][0]


@pytest.mark.parametrize("world", [2, 4, 8])
def test_each_link_is_a_chord_between_neighbours(world) -> None:
    _, f = frame(world, 1, 1)
    at = centres(f)
    links = [s.points for s in f.shapes if s.kind == "line"]
    assert len(links) == world
    ends = set()
    for a, b in links:
        ra = next(r for r, p in at.items() if math.dist(p, a) < 1e-6)
        rb = next(r for r, p in at.items() if math.dist(p, b) < 1e-6)
        ends.add(frozenset((ra, rb)))
    assert ends == {frozenset((r, (r + 1) % world)) for r in range(world)}


@pytest.mark.parametrize("world", [2, 4, 8])
@pytest.mark.parametrize("progress", [0.0, 0.5, 1.0])
def test_a_chip_rides_three_quarters_of_an_em_right_of_its_travel(world, progress) -> None:
    rec, f = frame(world, 1, 1, progress)
    at = centres(f)
    for r, move in rec.parts["collective"].steps[1].items():
        (x0, y0), (x1, y1) = at[r], at[move.to]
        chip = next(s for s in f.shapes if s.key == f"move.{r}")
        label = f.text_with_key(f"move.{r}")
        length = math.dist((x0, y0), (x1, y1))
        dx, dy = (x1 - x0) / length, (y1 - y0) / length
        vx, vy = chip.box.cx - x0, chip.box.cy - y0
        along = vx * dx + vy * dy  # how far along the chord
        right = vx * -dy + vy * dx  # to the right of travel on the screen
        assert right == pytest.approx(0.75 * label.font.px, rel=1e-6), (r, right)
        assert 0.2 * length < along < 0.8 * length


SIZES = [(w, h) for w in range(320, 1921, 80) for h in (240, 300, 360, 420, 480, 600, 800, 1080)]


@pytest.mark.parametrize("theme", ["light", "projector"])
@pytest.mark.parametrize("world", [2, 4, 8])
def test_a_ring_is_drawn_only_with_room_for_its_nodes_and_two_chips_apart(theme, world) -> None:
    # 9 em across at least, and neighbours' nodes 3.6 chips (1.9 em each) apart, in the
    # stage's small type; the nodes' circle sits 1.6 of the stage's base size inside the ring
    rec = record(load_recording(f"ring-{world}-ranks.jsonl"))
    drawn = 0
    for w, h in SIZES:
        ctx = SceneContext(w, h, load_theme(theme), LESSON.phase_text, estimate_width)
        base = max(ctx.base_px, ctx.min_px)
        em = max(ctx.min_px, base * 0.9)
        f = stage_frame(rec, Cursor(1, 1), 0.5, ctx, "ring")
        if not any(s.kind == "ellipse" for s in f.shapes):
            continue
        drawn += 1
        at = centres(f)
        cx = sum(x for x, _ in at.values()) / world
        cy = sum(y for _, y in at.values()) / world
        radius = math.dist(at[0], (cx, cy)) if world > 2 else math.dist(at[0], at[1]) / 2
        side = 2 * (radius + 1.6 * base)
        chord = 2 * radius * math.sin(math.pi / world)
        assert side >= 9 * em - 1e-6, (w, h, side / em)
        assert chord >= 3.6 * 1.9 * em - 1e-6, (w, h, chord / em)
    assert drawn >= (1 if (world, theme) == (8, "projector") else 10), drawn


@pytest.mark.parametrize(("world", "w", "h"), [(4, 400, 400), (4, 400, 900), (2, 360, 700)])
def test_on_a_narrow_stage_the_ring_fills_the_room_under_the_buffers_centred(world, w, h):
    # the buffers across the top (a head and a row a rank, 1.25 lines of the small type
    # each), the ring's square 0.3 margins under them, as wide as the stage less its margins
    # or as tall as the room left above the verdict's line and a margin; the verdict 0.3
    # margins under the ring
    last = 2 * world - 3
    ctx = SceneContext(w, h, load_theme("light"), LESSON.phase_text, estimate_width)
    base = max(ctx.base_px, ctx.min_px)
    pad, em = base * 0.6, max(ctx.min_px, base * 0.9)
    rec = record(load_recording(f"ring-{world}-ranks.jsonl"))
    f = stage_frame(rec, Cursor(last, 2), 1.0, ctx, "ring")
    top = next(t for t in f.texts if t.text in ("chunk 0", "c0")).box.y
    assert f.text_with_key(f"rank{world - 1}.chunk0").box.y > top  # the buffers on top
    rows_end = top + (world + 1) * em * 1.3 * 1.25
    below = h - top - em * 1.3 * 1.5
    side = min(below - (rows_end - top) - pad, w - 2 * pad)
    at = centres(f)
    cx = sum(x for x, _ in at.values()) / world
    assert cx == pytest.approx(w / 2)
    radius = side / 2 - 1.6 * base
    box_y = rows_end + pad * 0.3
    assert at[0] == pytest.approx((w / 2, box_y + side / 2 - radius))  # rank 0 on top
    verdict = f.text_with_key("verdict")
    assert verdict.box.y == pytest.approx(box_y + side + 0.3 * pad)


def test_the_buffers_go_across_the_top_once_the_stage_is_tall_enough_for_them_and_a_ring():
    # a stage too narrow for the ring beside the buffers: they go across the top (their type
    # not grown) once the room above the verdict's line holds the buffers' rows (a head and
    # a row a rank, 1.25 lines each) and 8 times the stage's base size more; below that the
    # buffers alone from the left margin, their type grown into the room
    rec = record(load_recording("ring-2-ranks.jsonl"))
    narrow = 0
    for h in range(250, 292, 2):
        ctx = SceneContext(360, h, load_theme("light"), LESSON.phase_text, estimate_width)
        base = max(ctx.base_px, ctx.min_px)
        em = max(ctx.min_px, base * 0.9)
        f = stage_frame(rec, Cursor(1, 2), 1.0, ctx, "ring")
        top = next(t for t in f.texts if t.text in ("chunk 0", "c0")).box.y
        below = h - top - em * 1.3 * 1.5
        across = below - 3 * em * 1.3 * 1.25 > base * 8
        narrow += across
        px = f.text_with_key("rank0.chunk0").font.px
        assert (px == pytest.approx(em)) is across, h
        if not across:  # no room for a ring beside them: the buffers from the left margin
            assert not any(s.kind == "ellipse" for s in f.shapes)
            label = next(t for t in f.texts if t.text == "rank 0")
            assert label.box.x == pytest.approx(base * 0.6), h
    assert 0 < narrow < 21  # heights on either side
