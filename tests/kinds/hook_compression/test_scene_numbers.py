"""What the comm-hooks stage says and draws, against the raw ``hook_step`` and
``hook_low_rank`` events (pure): each variant's bytes as a number and as a bar as long as its
share of the default's, its error in the colour its size earns (at the edges 1e-3 and 0.3),
the loss as the mean of the ranks' and rank 0's residual; the charts' points where the
recorded values put them on their log axes, up to the step shown; PowerSGD's factors cell by
cell, and the warm-up's words before them."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import pytest

from ddp_viz.kinds.hook_compression.scene import build
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

NAME = "comm-hooks-14-steps.jsonl"
LAYER = "hidden.weight"
RAW = [json.loads(x) for x in (DATA / NAME).read_text().splitlines() if x]
TABLE = next(d for d in RAW if d["event"] == "run_started")["scenario"]["hook_compression"]
STEPS = TABLE["steps"]
HOOK = {(d["variant"], d["step"], d["rank"]): d for d in RAW if d["event"] == "hook_step"}
LOW = {(d["variant"], d["step"]): d for d in RAW if d["event"] == "hook_low_rank"}
VARIANTS = list(dict.fromkeys(v for v, _, _ in HOOK))
RANKS = sorted({r for _, _, r in HOOK})


def _frame(events=None, step: int = STEPS - 1, phase: int = 3, w=1280, h=720, theme="light"):
    lesson = load_lesson("comm-hooks")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    rec = record(events if events is not None else load_recording(NAME))
    return build(rec, Cursor(step, phase), 1.0, ctx)


def _kb(n: float) -> str:
    return f"{n / 1000:.1f} kB" if n >= 10_000 else f"{n:,.0f} B"


def _sent(variant: str, step: int) -> int:
    return sum(HOOK[(variant, step, 0)]["sent"])


def _loss(variant: str, step: int) -> float:
    return sum(HOOK[(variant, step, r)]["loss"] for r in RANKS) / len(RANKS)


@pytest.mark.parametrize("step", [0, 10, STEPS - 1])
def test_each_variants_bytes_error_loss_and_residual_are_rank_0s_and_the_mean(step) -> None:
    f = _frame(step=step)
    light = load_theme("light")
    full = max(_sent(v, step) for v in VARIANTS)
    bars = {v: f.shapes[[s.key for s in f.shapes].index(f"bar.{v}")].box for v in VARIANTS}
    for v in VARIANTS:
        sent = _sent(v, step)
        said = f.text_with_key(f"bytes.{v}")
        assert (said.text, said.value) == (_kb(sent), sent), v
        # each bar as long as its share of the longest, its number just after it
        assert bars[v].w == pytest.approx(bars[VARIANTS[0]].w * sent / full, rel=1e-9), v
        assert 0 < said.box.x - bars[v].right < 10, v
        err = HOOK[(v, step, 0)]["errors"][LAYER]
        said = f.text_with_key(f"error.{v}")
        assert (said.text, said.value) == (f"{err:.1e}", err), v
        ink = light.ok if err < 1e-3 else light.text if err < 0.3 else light.bad
        assert said.color == ink, (v, err)
        loss = _loss(v, step)
        said = f.text_with_key(f"loss.{v}")
        assert said.value == pytest.approx(loss) and said.text == f"{loss:.4g}", v
        residual = f.text_with_key(f"residual.{v}")
        if v.startswith("powersgd") and not v.endswith("noef"):
            assert residual.text == f"{HOOK[(v, step, 0)]['residual']:.3g}", v
        else:
            assert residual is None, v
    assert bars[VARIANTS[0]].w > 50  # the default's bar takes the room left for the bars


def _with(variant: str, rank: int, **fields):
    out = []
    for e in load_recording(NAME):
        if e.kind == "hook_step" and (e.variant, e.step, e.rank) == (variant, STEPS - 1, rank):
            e = dataclasses.replace(e, **fields)
        out.append(e)
    return out


@pytest.mark.parametrize(
    ("err", "role"),
    [(9.99e-4, "ok"), (1e-3, "text"), (0.2999, "text"), (0.3, "bad"), (0.0, "ok")],
)
def test_the_errors_colour_turns_at_1e_3_and_at_0_3(err, role) -> None:
    v = "fp16"
    other = dict(HOOK[(v, STEPS - 1, 1)]["errors"], **{LAYER: 0.9})  # rank 1's is not shown
    events = _with(v, 0, errors=dict(HOOK[(v, STEPS - 1, 0)]["errors"], **{LAYER: err}))
    events = [
        dataclasses.replace(e, errors=other)
        if e.kind == "hook_step" and (e.variant, e.step, e.rank) == (v, STEPS - 1, 1)
        else e
        for e in events
    ]
    said = _frame(events).text_with_key(f"error.{v}")
    assert said.text == f"{err:.1e}" and said.color == getattr(load_theme("light"), role)


def test_a_variant_that_sent_nothing_has_no_bar_length_and_a_missing_rank_0_no_row() -> None:
    events = _with("fp16", 0, sent=[0, 0])
    events = [
        e
        for e in events
        if not (
            e.kind == "hook_step" and (e.variant, e.step, e.rank) == ("powersgd-r4", STEPS - 1, 0)
        )
    ]
    f = _frame(events)
    assert f.text_with_key("bytes.fp16").text == "0 B"
    bar = next(s.box for s in f.shapes if s.key == "bar.fp16")
    assert bar.w == 1.0  # a sliver, not a share
    assert f.text_with_key("bytes.powersgd-r4") is None
    assert f.text_with_key("error.powersgd-r4") is None
    assert any(t.text == "PowerSGD r=4 + EF" for t in f.texts)  # its label stays
    assert f.text_with_key("bytes.powersgd-r4-noef").text == _kb(
        _sent("powersgd-r4-noef", STEPS - 1)
    )


def _smoothed(v: str) -> list[float]:
    """The loss chart's series: the mean of the last 10 steps' losses (fewer at the start)."""
    losses = [_loss(v, s) for s in range(STEPS)]
    return [
        sum(losses[max(0, s - 9) : s + 1]) / len(losses[max(0, s - 9) : s + 1])
        for s in range(STEPS)
    ]


def _plot(f, which: str):
    """The plot's left, right and bottom, from its labels: "1" under its left end, "step N"
    under its right (the loss chart on the left, the bytes on the right)."""
    loss, size = f.text_with_key("chart.loss").box, f.text_with_key("chart.bytes").box
    assert loss.x < size.x and loss.y == size.y  # side by side
    k = 0 if which == "loss" else 1
    one = sorted((t for t in f.texts if t.text == "1"), key=lambda t: t.box.x)[k]
    end = sorted((t for t in f.texts if t.text == f"step {STEPS}"), key=lambda t: t.box.x)[k]
    return one.box.x, end.box.right, one.box.y - 2


@pytest.mark.parametrize("step", [5, STEPS - 1])
@pytest.mark.parametrize("which", ["loss", "bytes"])
def test_the_charts_points_are_the_recorded_values_up_to_the_step_shown(which, step) -> None:
    f = _frame(step=step)
    light = load_theme("light")
    series = {
        v: (_smoothed(v) if which == "loss" else [float(_sent(v, s)) for s in range(STEPS)])
        for v in VARIANTS
    }
    every = [x for row in series.values() for x in row]
    low, high = math.log10(min(every)), math.log10(max(every))
    label = (lambda x: f"{x:.3g}") if which == "loss" else (lambda x: f"{x / 1e3:,.1f} kB")
    left, right, bottom = _plot(f, which)
    axis = [t for t in f.texts if abs(t.box.right - (left - 3)) < 0.5 and not t.key]
    assert [t.text for t in axis] == [label(max(every)), label(min(every))]
    top = axis[0].box.y
    lines = [
        s
        for s in f.shapes
        if s.kind == "line" and s.width == 2 and left - 1 <= s.points[0][0] <= right + 1
    ]
    for i, v in enumerate(VARIANTS):
        mine = [s.points for s in lines if s.stroke == light.rank_color(i)]
        assert len(mine) == step, (v, which)  # a segment between each two steps shown
        points = [mine[0][0], *(q for _, q in mine)]
        for s, (x, y) in enumerate(points):
            assert x == pytest.approx(left + (right - left) * s / (STEPS - 1)), (v, s)
            want = bottom - (bottom - top) * (math.log10(series[v][s]) - low) / (high - low)
            assert y == pytest.approx(want), (v, which, s)
    cursor = [
        s
        for s in f.shapes
        if s.kind == "line" and s.stroke == light.text and left <= s.points[0][0] <= right
    ]
    assert [s.points[0][0] for s in cursor] == [
        pytest.approx(left + (right - left) * step / (STEPS - 1))
    ]


@pytest.mark.parametrize("step", [STEPS - 2, STEPS - 1])  # step 13's P·Qᵀ outgrows its exact
def test_powersgds_factors_cell_by_cell_beside_the_table(step) -> None:
    low = LOW[("powersgd-r1", step)]
    n, m = low["shape"]
    r, c = low["rank_r"], len(low["exact"])
    f = _frame(step=step, phase=2, w=1920, h=1080)
    light = load_theme("light")
    assert (
        f.text_with_key("factors.title").text == f"{LAYER} ({n}×{m}) ≈ P ({n}×{r}) · Qᵀ ({r}×{m})"
    )
    note = f"first {c} rows and columns · a rank sends {r * (n + m):,} values for it, not {n * m:,}"
    assert f.text_with_key("factors.note").text == note
    cells = [s for s in f.shapes if s.kind == "rect" and s.fill and not s.key]
    top = max(abs(x) for row in low["exact"] for x in row)
    blocks = [
        ("exact", low["exact"], top),
        ("P", low["p"], max(abs(x) for row in low["p"] for x in row)),
        ("Q", low["q"], max(abs(x) for row in low["q"] for x in row)),
        ("P·Qᵀ", low["approx"], top),
    ]
    assert len(cells) == sum(len(rows) * len(rows[0]) for _, rows, _ in blocks)
    k = 0
    side = cells[1].box.x - cells[0].box.x
    for label, rows, scale in blocks:
        head = f.text_with_key(f"factors.{label}").box
        first = cells[k].box
        assert first.x == pytest.approx(head.x), label  # under its label
        for i, row in enumerate(rows):
            for j, x in enumerate(row):
                cell = cells[k].box
                assert cell.w == pytest.approx(side) and cell.h == pytest.approx(side)
                assert (cell.x - first.x, cell.y - first.y) == (
                    pytest.approx(j * side),
                    pytest.approx(i * side),
                ), (label, i, j)
                assert cells[k].fill == (light.accent if x >= 0 else light.bad), (label, i, j)
                assert cells[k].fill_alpha == int(255 * min(1.0, abs(x) / scale)), (label, i, j)
                k += 1
    outlines = [s for s in f.shapes if s.kind == "rect" and not s.fill and s.stroke == light.muted]
    k = 0
    for (label, rows, _), outline in zip(blocks, outlines, strict=True):
        first = cells[k].box
        assert outline.width == 1 and (outline.box.x, outline.box.y) == (first.x, first.y)
        assert outline.box.w == pytest.approx(side * len(rows[0]))
        assert outline.box.h == pytest.approx(side * len(rows)), label
        k += len(rows) * len(rows[0])
    table = max(t.box.right for t in f.texts if t.key.startswith("error."))
    assert cells[0].box.x > table  # beside the table, in the top half
    assert cells[0].box.y < f.text_with_key("chart.loss").box.y


def test_before_powersgd_starts_the_stage_says_it_is_warming_up() -> None:
    assert ("powersgd-r1", TABLE["warmup"] - 1) not in LOW
    f = _frame(step=TABLE["warmup"] - 1, phase=2, w=1600, h=900)
    said = f.text_with_key("factors.none")
    assert said.text == "PowerSGD's warm-up: a plain all-reduce, no P and Q yet"
    assert f.text_with_key("factors.title") is None
    assert f.text_with_key("chart.loss") is not None


def test_the_tables_note_says_what_the_error_is_measured_against() -> None:
    note = "error of hidden.weight against the float64 average of the ranks' gradients"
    for phase in range(4):
        f = _frame(phase=phase, w=1920, h=1080)
        said = [t for t in f.texts if t.text == note]
        assert len(said) == (1 if phase else 0), phase
        rows = sorted(f.text_with_key(f"bytes.{v}").box.y for v in VARIANTS)
        pitch = f.text_with_key("bytes.fp16").font.px * 1.3 * 1.15  # a line and a bit apart
        assert [b - a for a, b in itertools.pairwise(rows)] == [pytest.approx(pitch)] * 5
        if said:
            assert said[0].box.y == pytest.approx(rows[-1] + pitch)  # under the last row
