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
