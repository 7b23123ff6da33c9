"""The ring scene from recorded runs: each step's chips travel from the rank that sent them to
its neighbour, each cell shows the values the ranks reported, and the closing charts are the
run's own byte counts and timings."""

from __future__ import annotations

import math

import pytest

from ddp_viz.kinds.collective.model import contributions, ring_state, ring_steps
from ddp_viz.kinds.collective.scene import cell_text
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

FOUR, EIGHT, TWO = "ring-4-ranks.jsonl", "ring-8-ranks.jsonl", "ring-2-ranks.jsonl"


def frame(name, step, phase, progress=1.0, w=1280, h=720, theme="light"):
    rec = record(load_recording(name))
    lesson = load_lesson("all-reduce")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(step, phase), progress, ctx, "ring")


def nodes(f, world):
    """Centre of each rank's node on the ring, from the frame's circles."""
    circles = [s for s in f.shapes if s.kind == "ellipse" and s.box.w > 10]
    assert len(circles) == world
    by_rank = {int(t.text): t for t in f.texts if t.text.isdigit() and t.font.bold}
    return {r: (next(c for c in circles if c.box.contains(by_rank[r].box, 8)).box) for r in by_rank}


@pytest.mark.parametrize("name", [FOUR, EIGHT, TWO])
def test_every_chip_travels_from_its_sender_to_the_next_rank(name) -> None:
    rec = record(load_recording(name))
    world = rec.world_size
    for step in range(ring_steps(world)):
        for progress in (0.0, 0.5, 1.0):
            _, f = frame(name, step, 1, progress)
            centres = {r: (b.cx, b.cy) for r, b in nodes(f, world).items()}
            chips = {s.key: s.box for s in f.shapes if s.key.startswith("move.")}
            assert len(chips) == world
            for r, move in rec.parts["collective"].steps[step].items():
                label = f.text_with_key(f"move.{r}")
                assert label.text == f"c{move.sent}" and label.value == move.sent
                (x0, y0), (x1, y1) = centres[r], centres[move.to]
                box = chips[f"move.{r}"]
                # on the segment from sender to receiver, further along as the step plays
                t = ((box.cx - x0) * (x1 - x0) + (box.cy - y0) * (y1 - y0)) / (
                    (x1 - x0) ** 2 + (y1 - y0) ** 2
                )
                off = abs((box.cx - x0) * (y1 - y0) - (box.cy - y0) * (x1 - x0)) / math.dist(
                    (x0, y0), (x1, y1)
                )
                # beside its own link (a little to the right of travel, so the two chips on a
                # two-rank ring's one link pass each other), from sender towards receiver
                assert off < box.h and 0.2 < t < 0.8, (step, r, t, off)
                assert (t < 0.4) if progress == 0.0 else (t > 0.6) if progress == 1.0 else True


@pytest.mark.parametrize("name", [FOUR, TWO])
def test_each_cell_is_what_the_ranks_reported_before_and_after_the_step(name) -> None:
    rec = record(load_recording(name))
    world = rec.world_size
    for step in range(ring_steps(world)):
        for phase, shown in ((0, step - 1), (2, step)):
            _, f = frame(name, step, phase)
            state = ring_state(rec.parts["collective"], world, shown)
            for r in range(world):
                for c in range(world):
                    cell = f.text_with_key(f"rank{r}.chunk{c}")
                    assert cell.value == state.sums[r][c]
                    assert cell.text == cell_text(state.values[r][c])
            if phase == 2:  # the chunk that arrived is marked on every rank
                marked = {s.key for s in f.shapes if s.key.startswith("got.")}
                assert marked == {f"got.{r}" for r in range(world)}


def test_the_last_step_ends_on_the_run_s_bytes_and_times() -> None:
    rec, f = frame(FOUR, ring_steps(4) - 1, 3)
    col = rec.parts["collective"]
    numbers = f.numbers()
    for r in range(4):
        for algo in ("naive", "ring"):
            assert numbers[f"bytes.{algo}.{r}"] == col.results[(algo, r)].bytes_sent
    dots = {s.key for s in f.shapes if s.key.startswith("time.")}
    assert dots == {f"time.{t.algo}.{t.length}" for t in col.timings}
    assert "what each algorithm cost" in f.all_text()
    _, f = frame(FOUR, ring_steps(4) - 1, 2)
    verdict = f.text_with_key("verdict").text
    assert verdict.startswith("✓") and "dist.all_reduce" in verdict


@pytest.mark.parametrize(
    ("w", "h", "theme"),
    [
        (1280, 720, "light"),
        (560, 480, "light"),
        (560, 480, "projector"),
        (1341, 700, "projector"),
        # a 1920×1080 projector's stage: the time chart's legend ran past its right edge
        (1344, 778, "projector"),
        (1024, 600, "projector"),
    ],
)
def test_nothing_overlaps_or_leaves_the_stage(w, h, theme) -> None:
    from tests.frames import assert_inside_and_apart

    for name in (FOUR, EIGHT, TWO, "ring-long.jsonl"):
        world = record(load_recording(name)).world_size
        for step in range(ring_steps(world)):
            for phase in range(4):
                _, f = frame(name, step, phase, 0.5 if phase == 1 else 1.0, w, h, theme)
                assert_inside_and_apart(f)
                if theme == "projector":
                    assert f.smallest_px() >= 24


@pytest.mark.parametrize("name", [FOUR, EIGHT, TWO])
def test_the_fill_follows_the_schedule_and_the_colour_the_rank_that_finishes_each_chunk(
    name,
) -> None:
    """Checked against sources the scene does not draw from: the schedule's arithmetic for how
    many ranks a copy sums, and the recorded events for who finishes each chunk."""
    rec = record(load_recording(name))
    world, col = rec.world_size, rec.parts["collective"]
    theme = load_theme("light")
    finisher = {m.received: r for r, m in col.steps[world - 2].items()}  # end of reduce-scatter
    assert sorted(finisher) == list(range(world))
    for step in range(-1, ring_steps(world)):
        state = ring_state(col, world, step)
        assert state.sums == [
            [contributions(step, r, c, world) for c in range(world)] for r in range(world)
        ]
    for step in range(ring_steps(world)):
        _, f = frame(name, step, 2)
        cells = {s.key: s for s in f.shapes if s.key.startswith("rank") and s.fill}
        for r in range(world):
            for c in range(world):
                assert cells[f"rank{r}.chunk{c}"].fill == theme.rank_color(finisher[c])
        by_sum = sorted((f.text_with_key(k).value, s.fill_alpha) for k, s in cells.items())
        assert [a for _, a in by_sum] == sorted(a for _, a in by_sum)  # fuller as it sums more
        _, moving = frame(name, step, 1, 0.5)
        for r, move in col.steps[step].items():
            chip = next(s for s in moving.shapes if s.key == f"move.{r}" and s.fill)
            assert chip.fill == theme.rank_color(finisher[move.sent])
    _, last = frame(name, ring_steps(world) - 1, 2)
    alphas = {s.fill_alpha for s in last.shapes if s.key.startswith("rank") and s.fill}
    assert len(alphas) == 1  # every copy holds the whole sum


def test_a_long_vector_shows_every_chunk_s_first_values() -> None:
    rec, f = frame("ring-long.jsonl", 0, 0)
    assert rec.parts["collective"].inputs[0].values["shape"] == [100]  # a summary travelled
    for r in range(3):
        for c in range(3):
            cell = f.text_with_key(f"rank{r}.chunk{c}")
            assert cell.text.split()[0] == fmt(rec.parts["collective"].inputs[r].heads[c][0], 3)


@pytest.mark.parametrize(
    ("w", "h", "theme"), [(1280, 720, "light"), (560, 480, "light"), (1341, 700, "projector")]
)
@pytest.mark.parametrize(("cores", "warned"), [(2, True), (8, False), (0, False)])
def test_the_times_say_when_the_ranks_took_turns_on_too_few_cores(w, h, theme, cores, warned):
    """Four ranks on two cores: 1,000 values took longer than 1,000,000 in one run, and the
    chart read as a lesson about vector length."""
    from dataclasses import replace

    from ddp_viz.model import protocol
    from tests.frames import assert_inside_and_apart

    events = [
        replace(e, cores=cores) if isinstance(e, protocol.RunStarted) else e
        for e in load_recording(FOUR)
    ]
    rec = record(events)
    assert rec.cores == cores
    lesson = load_lesson("all-reduce")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    f = stage_frame(rec, Cursor(ring_steps(4) - 1, 3), 1.0, ctx, "ring")
    text = " ".join(f.all_text().split())
    assert ("4 ranks on 2 cores take turns" in text) == warned
    assert_inside_and_apart(f)
    assert {s.key for s in f.shapes if s.key.startswith("time.")}  # the chart is still drawn
