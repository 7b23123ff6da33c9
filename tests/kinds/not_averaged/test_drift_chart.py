"""The not-averaged stage's drift chart, without DDP's broadcast (2 ranks, 4 steps): per step
so far, the largest difference between the ranks' BatchNorm buffers as the forward began and
after it, each bar as tall as its recorded value on one scale, in its step's slot, in its
moment's colour, and only for the steps reached. Expected values come from the raw
``buffers`` lines, read here with ``json``."""

from __future__ import annotations

import json

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

NO_SYNC = "not-averaged-no-sync.jsonl"
THEME = load_theme("light")
SHARDS, LOCAL, ALLREDUCE, STEP = range(4)


def frame(step: int, phase: int, w: int = 1280, h: int = 720):  # type: ignore[no-untyped-def]
    rec = record(load_recording(NO_SYNC))
    lesson = load_lesson("not-averaged")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, phase), 1.0, ctx, "not_averaged")


def drift() -> dict[tuple[str, int], float]:
    """(moment, step) -> the largest |rank 0 - rank 1| over every buffer value."""
    lines = [json.loads(ln) for ln in (DATA / NO_SYNC).read_text().splitlines() if ln.strip()]
    got = {(d["step"], d["rank"]): d for d in lines if d["event"] == "buffers"}
    out = {}
    for step in range(4):
        for moment in ("before", "after"):
            a, b = got[(step, 0)][moment], got[(step, 1)][moment]
            out[(moment, step)] = max(
                abs(x - y) for n in a for x, y in zip(a[n], b[n], strict=True)
            )
    return out


@pytest.mark.parametrize(("step", "phase"), [(0, SHARDS), (1, LOCAL), (3, SHARDS), (3, LOCAL)])
def test_each_bar_is_as_tall_as_its_recorded_drift_on_one_scale(step, phase) -> None:
    f = frame(step, phase)
    want = {k: v for k, v in drift().items() if k[1] <= step}
    numbers = f.numbers()
    bars = {s.key: s for s in f.shapes if s.key.startswith("bar.")}
    assert set(bars) == {f"bar.{m}.{s}" for m, s in want}  # the steps so far, no further
    for (moment, s), value in want.items():
        assert numbers[f"drift.{moment}.{s}"] == pytest.approx(value, rel=1e-12)
        assert bars[f"bar.{moment}.{s}"].fill == (THEME.accent if moment == "before" else THEME.bad)
    tallest = max(want.values())
    scale = max(b.box.h for b in bars.values())
    base = {round(b.box.bottom, 6) for b in bars.values()}
    assert len(base) == 1  # one baseline
    for (moment, s), value in want.items():
        assert bars[f"bar.{moment}.{s}"].box.h == pytest.approx(scale * value / tallest)
    # each step's pair in its own slot, left to right, "before" left of "after"
    lefts = [bars[f"bar.{m}.{s}"].box.x for s in range(step + 1) for m in ("before", "after")]
    assert lefts == sorted(lefts) and len(set(lefts)) == len(lefts)
    # every step of the run is labelled under the chart, reached or not
    labels = [t.text for t in f.texts if t.text in {f"step {s + 1}" for s in range(4)}]
    assert labels == [f"step {s + 1}" for s in range(4)]
    # the value's label sits on its bar
    for (moment, s), _ in want.items():
        bar, label = bars[f"bar.{moment}.{s}"].box, f.text_with_key(f"drift.{moment}.{s}").box
        assert label.bottom <= bar.y + 0.5 and abs(label.cx - bar.cx) < 1.0


def test_the_chart_says_what_its_bars_are() -> None:
    f = frame(2, SHARDS)
    text = f.all_text()
    for words in ("largest difference between ranks, per step", "as the forward began",
                  "after it"):  # fmt: skip
        assert words in text
    legend = [s for s in f.shapes if s.kind == "rect" and not s.key and s.fill]
    assert [s.fill for s in legend][-2:] == [THEME.accent, THEME.bad]


@pytest.mark.parametrize("phase", [ALLREDUCE, STEP])
def test_the_chart_shows_only_with_the_buffers(phase) -> None:
    f = frame(3, phase)
    assert not [s for s in f.shapes if s.key.startswith("bar.")]
    assert not [k for k in f.numbers() if k.startswith("drift.")]


def test_a_short_stage_leaves_the_chart_out_and_a_drawn_one_fits() -> None:
    assert not [s for s in frame(3, SHARDS, h=250).shapes if s.key.startswith("bar.")]
    drawn = 0
    for h in range(250, 420, 10):
        f = frame(3, SHARDS, h=h)
        bars = [s.box for s in f.shapes if s.key.startswith("bar.")]
        if not bars:
            continue
        drawn += 1
        assert len(bars) == 8
        assert all(b.y >= 0 and b.bottom <= h for b in bars)
        assert all(t.box.y >= 0 and t.box.bottom <= h for t in f.texts)
        assert max(b.h for b in bars) > 20  # the tallest bar is a bar, not a line
    assert drawn > 10
