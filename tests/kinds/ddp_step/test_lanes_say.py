"""What the DDP step stage's lanes, data table and hub say, from the raw events: each data row
in the colour of the rank whose shard holds it, each rank's pid (or that it is still starting)
and rows, each gradient's bar as long as its value against the step's largest, in its rank's
colour before the all-reduce and the accent's after it, and the hub's "÷ N then Σ" lit once the
all-reduce runs."""

from __future__ import annotations

import re

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

UNEVEN, FOUR = "uneven-3-ranks.jsonl", "four-ranks-3-steps.jsonl"
THEME = load_theme("light")


def frame_at(rec, step: int, phase: int, progress: float = 1.0, w: int = 1500, h: int = 900):
    ctx = SceneContext(w, h, THEME, load_lesson().phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, phase), progress, ctx)


def started(name: str):
    return next(e for e in load_recording(name) if e.kind == "run_started")


@pytest.mark.parametrize("name", [UNEVEN, FOUR])
def test_each_data_row_is_in_the_colour_of_the_rank_that_holds_it(name: str) -> None:
    start = started(name)
    owner = {i: r for r, rows in enumerate(start.shards) for i in rows}
    x, y = start.scenario["x"], start.scenario["y"]
    assert len(set(owner.values())) == start.world_size
    frame = frame_at(record(load_recording(name)), 0, 0)
    cells = [t for t in frame.texts if t.font.mono and re.match(r"^\d+: ", t.text)]
    assert len(cells) == len(x)
    for t in cells:
        i = int(t.text.split(":")[0]) - 1
        assert t.text.endswith(f"{x[i]:g}, {y[i]:g}")
        box = next(
            s
            for s in frame.shapes
            if s.kind == "rrect" and s.fill_alpha == 40 and s.box.contains(t.box, 2)
        )
        assert box.stroke == THEME.rank_color(owner[i]), t.text


def test_each_lane_names_its_rank_its_pid_and_its_rows() -> None:
    events = load_recording(UNEVEN)
    pids = {e.rank: e.pid for e in events if e.kind == "rank_started"}
    shards = started(UNEVEN).shards
    frame = frame_at(record(events), 0, 1)
    texts = [t.text for t in frame.texts]
    for r, pid in pids.items():
        assert f"pid {pid}" in texts
        rows = frame.text_with_key(f"rank{r}.rows").text
        first, last = shards[r][0] + 1, shards[r][-1] + 1
        assert rows == (f"row {first}" if first == last else f"rows {first}–{last}")
    # a rank that has not reported its start yet is still starting
    late = record([e for e in events if not (e.kind == "rank_started" and e.rank == 2)])
    texts = [t.text for t in frame_at(late, 0, 1).texts]
    assert "starting" in texts and f"pid {pids[2]}" not in texts


def test_each_bar_is_as_long_as_its_value_in_its_ranks_colour_then_the_accent() -> None:
    events = load_recording(FOUR)
    step = 1
    local = {
        (e.rank, k): abs(v[0])
        for e in events
        if e.kind == "local_grad" and e.step == step
        for k, v in e.grads.items()
    }
    avg = {
        (e.rank, k): abs(v[0])
        for e in events
        if e.kind == "averaged_grad" and e.step == step
        for k, v in e.grads.items()
    }
    scale = max([*local.values(), *avg.values()])
    frame = frame_at(record(events), step, 3)
    bars = {s.key: s for s in frame.shapes if s.key.startswith("bar:")}
    for kind, values in (("local", local), ("averaged", avg)):
        widths = {rk: bars[f"bar:rank{rk[0]}.{kind}.{rk[1]}"].box.w for rk in values}
        full = max(widths.values()) * scale / max(values.values())  # the column's whole length
        for (r, name), v in values.items():
            want = max(1.0, full * v / scale)
            assert widths[(r, name)] == pytest.approx(want, rel=1e-6), (kind, r, name)
            fill = bars[f"bar:rank{r}.{kind}.{name}"].fill
            assert fill == (THEME.rank_color(r) if kind == "local" else THEME.accent)


@pytest.mark.parametrize(("phase", "lit"), [(0, False), (1, False), (2, True), (3, True)])
def test_the_hub_divides_by_the_world_size_then_sums_once_the_all_reduce_runs(
    phase: int, lit: bool
) -> None:
    frame = frame_at(record(load_recording(FOUR)), 1, phase)
    labels = [t for t in frame.texts if t.key == "hub.label"]
    assert [t.text for t in labels] == ["÷ 4", "then Σ"]
    assert {t.color for t in labels} == {THEME.text if lit else THEME.muted}
    hub = next(s for s in frame.shapes if s.key == "hub")
    assert hub.stroke == (THEME.accent if lit else THEME.grid)
    dots = [s for s in frame.shapes if s.key == "dot"]
    assert len(dots) == (4 if phase == 2 else 0)


def test_labels_name_each_tensor_and_sit_on_their_numbers_baseline() -> None:
    """‖·‖ around a tensor of more than one value (its norm is shown), the value itself for
    one; a label in smaller type shares its number's baseline (an ascent of 0.76 em)."""
    events = load_recording("mlp-2-ranks-3-steps.jsonl")
    start = started("mlp-2-ranks-3-steps.jsonl")
    want = []
    for p in start.params:
        short = re.sub(r"weight$", "w", re.sub(r"bias$", "b", p["name"]))
        many = p["shape"] != [1] and p["shape"] != [1, 1]
        want.append(f"‖∇{short}‖" if many else f"∇{short}")
    assert any(w.startswith("‖") for w in want) and not all(w.startswith("‖") for w in want)
    frame = frame_at(record(events), 1, 2, w=2400, h=1400)
    labels = [t for t in frame.texts if t.text in want and t.color == THEME.muted]
    # each lane's local column (and, with room, its averaged one), in the tensors' order
    assert len(labels) in (len(want) * start.world_size, 2 * len(want) * start.world_size)
    assert [t.text for t in labels] == want * (len(labels) // len(want))
    for p, label in zip(start.params, labels, strict=False):  # rank 0's lane
        number = frame.text_with_key(f"rank0.local.{p['name']}")
        assert label.font.px < number.font.px
        base = label.box.y + 0.76 * label.font.px
        assert base == pytest.approx(number.box.y + 0.76 * number.font.px)
