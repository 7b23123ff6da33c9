"""The accumulation stage's table as a reader scans it (a real 4-rank recording): each
micro-batch's column under its head, every rank's block of lines (its rows, each parameter's
.grad, "all-reduced?") in rank order, the labels on the left in the rank's own colour, the
rows each micro-batch held as recorded."""

from __future__ import annotations

import json

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Align, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

FOUR = "accumulate-4-ranks.jsonl"
THEME = load_theme("light")
LINES = [json.loads(ln) for ln in (DATA / FOUR).read_text().splitlines() if ln.strip()]


def frame(step: int, phase: int, w: int = 1280, h: int = 720):  # type: ignore[no-untyped-def]
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(load_recording(FOUR)), Cursor(step, phase), 1.0, ctx, "accumulation")


@pytest.mark.parametrize("step", [0, 1])
def test_each_micro_batch_is_a_column_and_each_rank_a_block(step) -> None:
    f = frame(step, 2)
    heads = [next(t for t in f.texts if t.text == f"micro {j + 1}") for j in range(3)]
    assert len({t.box.y for t in heads}) == 1
    centres = [t.box.cx for t in heads]
    assert centres == sorted(centres)
    tops = []
    for r in range(4):
        label = next(t for t in f.texts if t.text == f"rank {r} · rows")
        assert label.color == THEME.rank_color(r) and label.box.y > heads[0].box.y
        micro = [d for d in LINES if d["event"] == "micro_step" and d["step"] == step
                 and d["rank"] == r]  # fmt: skip
        for j, d in enumerate(sorted(micro, key=lambda d: d["micro"])):
            rows = next(t for t in f.texts if t.box.y == label.box.y
                        and t.text == ", ".join(str(i + 1) for i in d["rows"])
                        and abs(t.box.cx - centres[j]) < 0.5)  # fmt: skip
            assert rows.align == Align.CENTER
            cells = [f.text_with_key(f"rank{r}.micro{j}.{k}") for k in
                     ("grad.weight", "grad.bias", "allreduced")]  # fmt: skip
            assert [t.box.cx for t in cells] == pytest.approx([centres[j]] * 3)
            ys = [rows.box.y] + [t.box.y for t in cells]
            assert ys == sorted(ys) and len(set(ys)) == 4  # rows, weight, bias, all-reduced
        labels = [t.text for t in f.texts if t.box.x == label.box.x and t.box.y > label.box.y
                  and t.color == THEME.muted][:3]  # fmt: skip
        assert labels == ["weight.grad", "bias.grad", "all-reduced"]
        tops.append(label.box.y)
    assert tops == sorted(tops)
