"""The sharded stage's grids of the rows each rank owns (phase 0), laid out as a reader checks
them (pure): one row of boxes a rank, evenly spaced top to bottom and labelled in its middle;
in each row a box per parameter, as wide as its rows, the boxes filling their panel with equal
gaps and the two panels side by side within the stage; the note under the last row; and each
filled part where the rank's event says its rows are. At 4 ranks on a laptop and at 8 ranks on
a projector."""

from __future__ import annotations

import itertools
import json

import pytest

from ddp_viz.kinds.sharded.scene import build
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

NAMES = ["inp.weight", "inp.bias", "hidden.weight", "hidden.bias", "out.weight", "out.bias"]
ROWS = [64, 64, 64, 64, 8, 8]
CASES = [
    ("sharded-4-ranks.jsonl", "light", 1280, 800),
    ("sharded-4-ranks.jsonl", "light", 889, 495),
    ("sharded-8-ranks.jsonl", "projector", 1341, 696),
    ("sharded-2-ranks.jsonl", "projector", 889, 495),
]


def _owned(name: str, step: int) -> dict[tuple[str, int], dict[str, list[int]]]:
    lines = (DATA / name).read_text().splitlines()
    return {
        (d["way"], d["rank"]): d["owned"]
        for d in map(json.loads, lines)
        if d["event"] == "sharded_step" and d["step"] == step
    }


@pytest.mark.parametrize(("name", "theme", "w", "h"), CASES)
def test_each_ranks_row_of_boxes_fills_its_panel_with_its_owned_rows(name, theme, w, h) -> None:
    th = load_theme(theme)
    lesson = load_lesson("sharded")
    ctx = SceneContext(w, h, th, lesson.phase_text, estimate_width)
    rec = record(load_recording(name))
    world, step = rec.world_size, 1
    f = build(rec, Cursor(step, 0), 1.0, ctx)
    owned = _owned(name, step)
    pad = f.text_with_key("held.rank").box.x  # the stage's margin: the table starts there
    heads = [f.text_with_key("slices.zero"), f.text_with_key("slices.fsdp")]
    body = heads[0].font.px
    boxes = [s for s in f.shapes if s.kind == "rect" and s.stroke == th.grid and s.width == 1]
    parts = [s for s in f.shapes if s.key.startswith("own.")]
    assert len(boxes) == 2 * world * len(NAMES)
    labels = [t for t in f.texts if t.text in {f"r{r}" for r in range(world)} and t.font.px]
    labels = [t for t in labels if t.box.y > heads[0].box.y]
    assert [t.text for t in labels] == [f"r{r}" for r in range(world)] * 2
    edges = [(pad, heads[1].box.x - body), (heads[1].box.x, w - pad)]  # each panel's span
    assert heads[1].box.x - body == pytest.approx((w - 2 * pad - body) / 2 + pad)
    pitch = None
    for k, way in enumerate(("zero", "fsdp")):
        left, right = edges[k]
        assert heads[k].box.x == pytest.approx(left)
        for rank in range(world):
            row = boxes[(k * world + rank) * len(NAMES) :][: len(NAMES)]
            label = labels[k * world + rank]
            assert label.color == th.rank_color(rank)
            assert label.box.x == pytest.approx(left)
            assert label.box.cy == pytest.approx(row[0].box.cy), (way, rank)  # in its middle
            assert row[0].box.x > label.box.right
            gaps = [b.box.x - a.box.right for a, b in itertools.pairwise(row)]
            assert gaps == [pytest.approx(body * 0.3)] * (len(NAMES) - 1)
            assert row[-1].box.right + body * 0.3 == pytest.approx(right), (way, rank)
            unit = row[0].box.w / ROWS[0]
            assert [b.box.w for b in row] == [pytest.approx(max(2.0, n * unit)) for n in ROWS]
            assert all(b.box.y == row[0].box.y and b.box.h == row[0].box.h for b in row)
            if rank:
                above = boxes[(k * world + rank - 1) * len(NAMES)].box
                step_y = row[0].box.y - above.y
                pitch = pitch or step_y
                assert step_y == pytest.approx(pitch)  # evenly spaced
                # the box takes the middle 70% of its row: 15% free above and below
                assert row[0].box.h == pytest.approx(pitch * 0.7)
            for name, box in zip(NAMES, row, strict=True):
                first, rows = owned[(way, rank)][name]
                d0 = ROWS[NAMES.index(name)]
                mine = [
                    p for p in parts if p.key == f"own.{name}" and p.box.y == box.box.y
                    and box.box.x <= p.box.x < box.box.right
                ]  # fmt: skip
                if not rows:
                    assert not mine, (way, rank, name)
                    continue
                assert len(mine) == 1 and mine[0].fill == th.rank_color(rank), (way, rank, name)
                assert mine[0].box.x == pytest.approx(box.box.x + box.box.w * first / d0)
                assert mine[0].box.w == pytest.approx(box.box.w * rows / d0)
                assert mine[0].box.h == box.box.h
    last = boxes[world * len(NAMES) - 1].box
    bottom = last.y + last.h / 0.7 * 0.85  # the last row's bottom
    note = f.text_with_key("slices.note")
    assert bottom <= h - pad + 0.5
    if note is not None:
        assert note.box.y >= bottom and note.box.bottom <= h - pad + 0.5
        assert note.text.startswith("boxes: inp.w")


def test_the_note_names_every_parameters_rows_where_it_fits() -> None:
    lesson = load_lesson("sharded")
    ctx = SceneContext(1280, 800, load_theme("light"), lesson.phase_text, estimate_width)
    f = build(record(load_recording("sharded-4-ranks.jsonl")), Cursor(0, 0), 1.0, ctx)
    rows = ", ".join(map(str, ROWS))
    assert f.text_with_key("slices.note").text == f"boxes: {', '.join(NAMES)} ({rows} rows)"
    heads = [f.text_with_key(f"slices.{w}").text for w in ("zero", "fsdp")]
    assert heads == ["DDP + ZeRO-1: rows each rank owns", "FSDP2: rows each rank owns"]
    narrow = SceneContext(600, 800, load_theme("projector"), lesson.phase_text, estimate_width)
    f = build(record(load_recording("sharded-4-ranks.jsonl")), Cursor(0, 0), 1.0, narrow)
    note = f.text_with_key("slices.note")
    assert note is None or note.text == "boxes: inp.w, inp.b, hidden.w, hidden.b, out.w, out.b"
    heads = [f.text_with_key(f"slices.{w}") for w in ("zero", "fsdp")]
    assert [h.text for h in heads if h] in (
        ["DDP + ZeRO-1: owns", "FSDP2: owns"],
        ["DDP + ZeRO-1", "FSDP2: owns"],
        ["DDP + ZeRO-1", "FSDP2"],
        ["DDP + ZeRO-1: owns", "FSDP2: rows each rank owns"],
    )
