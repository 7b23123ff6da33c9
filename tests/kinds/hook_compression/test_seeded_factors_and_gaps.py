"""Seeded-bug survivors on the comm-hooks stage, against the raw ``hook_low_rank`` and
``hook_step`` events: P and Q's note at a PowerSGD rank above 1 (the recording's shown
variant has r = 1, where ``r · (n + m)`` and ``n + m`` are the same number), and the loss
curve while the newest step's losses are still coming in (a finished replay has no gap)."""

from __future__ import annotations

import dataclasses
import json

from ddp_viz.kinds.hook_compression.scene import build
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

NAME = "comm-hooks-14-steps.jsonl"
RAW = [json.loads(x) for x in (DATA / NAME).read_text().splitlines() if x]
STEPS = next(d for d in RAW if d["event"] == "run_started")["steps"]
LOW = {(d["variant"], d["step"]): d for d in RAW if d["event"] == "hook_low_rank"}
VARIANTS = list(dict.fromkeys(d["variant"] for d in RAW if d["event"] == "hook_step"))


def _frame(events, step: int, phase: int, w: int = 1920, h: int = 1080):
    lesson = load_lesson("comm-hooks")
    ctx = SceneContext(w, h, load_theme("light"), lesson.phase_text, estimate_width)
    return build(record(events), Cursor(step, phase), 1.0, ctx)


def test_the_factors_note_counts_the_r_columns_of_p_and_q() -> None:
    r = 4  # the recording's factors, widened to r columns (P n×r, Q m×r)
    events = [
        dataclasses.replace(e, rank_r=r, p=[row * r for row in e.p], q=[row * r for row in e.q])
        if e.kind == "hook_low_rank"
        else e
        for e in load_recording(NAME)
    ]
    step = STEPS - 1
    low = next(d for (v, s), d in LOW.items() if s == step)
    n, m = low["shape"]
    c = len(low["exact"])
    f = _frame(events, step, phase=2)
    assert f.text_with_key("factors.title").text == (
        f"{low['layer']} ({n}×{m}) ≈ P ({n}×{r}) · Qᵀ ({r}×{m})"
    )
    want = f"first {c} rows and columns · a rank sends {r * (n + m):,} values for it, not {n * m:,}"
    assert f.text_with_key("factors.note").text == want


def test_the_loss_curve_waits_for_every_loss_of_its_window_mid_step() -> None:
    """Mid-stream: at step ``k`` only the first hook has reported; the others' smoothed loss
    at ``k`` is not known yet, so their curves end at step ``k - 1``."""
    k = 5
    events = [
        e
        for e in load_recording(NAME)
        if not (
            e.kind in ("hook_step", "hook_low_rank")
            and (e.step > k or (e.step == k and e.variant != VARIANTS[0]))
        )
        and e.kind not in ("run_finished",)
    ]
    f = _frame(events, k, phase=3)
    light = load_theme("light")
    split = f.text_with_key("chart.bytes").box.x  # the loss chart is left of the bytes chart
    lines = [s for s in f.shapes if s.kind == "line" and s.width == 2 and s.points[0][0] < split]
    for i, v in enumerate(VARIANTS):
        mine = [s for s in lines if s.stroke == light.rank_color(i)]
        # a segment between each two steps drawn: steps 0..k for the first, 0..k-1 for the rest
        assert len(mine) == (k if i == 0 else k - 1), v
