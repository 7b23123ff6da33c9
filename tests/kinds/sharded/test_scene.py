"""The sharded stage drawn from a recorded 4-rank run (no torch, no Qt): every lane keeps its
rank label even on the smallest projector, each bar's label names a call the rank issued with
the table's number, and calls that ran at the same time on a rank sit in different sub-rows."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.sharded.model import KIND
from ddp_viz.kinds.sharded.scene import build
from ddp_viz.kinds.sharded.scene_lanes import busiest_way, sub_rows
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

STAGES = [("light", 889, 495), ("projector", 889, 495), ("projector", 1341, 696)]


@pytest.fixture(scope="module")
def rec():
    return record(load_recording("sharded-4-ranks.jsonl"))


def frame(rec, phase: int, theme: str, w: float, h: float):
    lesson = load_lesson("sharded")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return build(rec, Cursor(1, phase), 1.0, ctx)


@pytest.mark.parametrize(("theme", "w", "h"), STAGES)
@pytest.mark.parametrize("phase", [1, 2, 3])
def test_every_lane_has_its_rank_label_and_every_bar_label_its_call(rec, phase, theme, w, h):
    f = frame(rec, phase, theme, w, h)
    texts = [t.text for t in f.texts]
    assert all(f"r{r}" in texts for r in range(rec.world_size)), texts
    part = rec.parts[KIND]
    bars = [t for t in f.texts if t.key.startswith("bar.") and t.key.endswith(".0")]
    assert bars, "some bar is wide enough for its number"
    for t in bars:
        _, rank, seq, _ = t.key.split(".")
        calls = [c for w in ("ddp", "zero", "fsdp") for c in part.calls(w, 1, int(rank))]
        assert any(c.seq == int(seq) for c in calls)
        assert t.text.split()[0] == f"#{int(seq) + 1}"  # the table's number


def test_the_tables_numbers_are_the_bars_numbers(rec) -> None:
    f = frame(rec, 2, "light", 889, 495)
    table = {w for t in f.texts if t.key.startswith("call.fsdp") for w in t.text.split()}
    lanes = {t.text.split()[0] for t in f.texts if t.key.startswith("bar.1.") and t.key[-1] == "0"}
    table = {w for w in table if w.startswith("#")}
    assert table == lanes == {f"#{n}" for n in range(4, 10)}


def test_calls_that_overlap_on_a_rank_get_sub_rows_of_their_own(rec) -> None:
    f = frame(rec, 3, "light", 889, 495)

    class Builder:  # what busiest_way reads
        part, world, phase_word = rec.parts[KIND], rec.world_size, "step"

    way, calls = busiest_way(Builder, 1)  # type: ignore[arg-type]
    assert way.value == "zero"
    boxes = {s.key: s.box for s in f.shapes if s.key.startswith("lane.")}
    overlapped = 0
    for rank, mine in calls.items():
        rows = sub_rows(mine)
        for i, a in enumerate(mine):
            for b, kb in zip(mine[i + 1 :], rows[i + 1 :], strict=True):
                if a.end > b.start + 1e-9:  # ran at the same time
                    overlapped += 1
                    assert rows[i] != kb
                    assert not boxes[f"lane.{rank}.{a.seq}"].overlaps(boxes[f"lane.{rank}.{b.seq}"])
    assert overlapped, "ZeRO's broadcasts overlap somewhere in this run"


def test_the_holds_table_spells_out_the_formulas_on_a_laptop(rec) -> None:
    f = frame(rec, 0, "light", 889, 495)
    zero = next(t for t in f.texts if t.key == "formula.zero")
    assert zero.text.startswith("✓ Adam state") and "by whole param" in zero.text
    small = frame(rec, 0, "projector", 889, 495)
    assert next(t for t in small.texts if t.key == "formula.zero").text.startswith("✓")
