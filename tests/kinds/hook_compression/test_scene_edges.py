"""The comm-hooks stage at its edges (pure): megabytes, a narrow stage (the charts one above
the other, the residual column and the long heading given way), and a long run whose lines
are thinned to a point every few steps with the step shown kept."""

from __future__ import annotations

import dataclasses
import math

import pytest

from ddp_viz.kinds.hook_compression.events import HookStep
from ddp_viz.kinds.hook_compression.scene import build, human_bytes
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

NAME = "comm-hooks-14-steps.jsonl"
LIGHT = load_theme("light")


@pytest.mark.parametrize(
    ("n", "said"),
    [
        (0, "0 B"),
        (9_999, "9,999 B"),
        (10_000, "10.0 kB"),
        (281_604, "281.6 kB"),
        (999_000, "999.0 kB"),
        (1_000_000, "1.00 MB"),
        (12_345_678, "12.35 MB"),
    ],
)
def test_bytes_are_written_in_b_kb_or_mb(n, said) -> None:
    assert human_bytes(n) == said


def _frame(events, step, phase=3, w=1280, h=720):
    lesson = load_lesson("comm-hooks")
    ctx = SceneContext(w, h, LIGHT, lesson.phase_text, estimate_width)
    return build(record(events), Cursor(step, phase), 1.0, ctx)


def test_on_a_narrow_stage_the_charts_stand_one_above_the_other() -> None:
    f = _frame(load_recording(NAME), 13, w=600, h=900)
    loss, size = f.text_with_key("chart.loss").box, f.text_with_key("chart.bytes").box
    assert loss.x == size.x and size.y > loss.y + 100
    wide = _frame(load_recording(NAME), 13)
    loss, size = wide.text_with_key("chart.loss").box, wide.text_with_key("chart.bytes").box
    assert loss.y == size.y and size.x > loss.x + 300


def test_on_a_narrow_stage_the_table_keeps_its_numbers_and_drops_the_residual() -> None:
    f = _frame(load_recording(NAME), 13, w=400, h=900)
    heads = [t.text for t in f.texts if not t.key and t.text in ("bytes", "bytes a rank sent")]
    assert heads == ["bytes"]  # the short heading
    assert f.text_with_key("loss.powersgd-r1") is not None
    assert f.text_with_key("residual.powersgd-r1") is None
    wide = _frame(load_recording(NAME), 13)
    said = next(t.text for t in wide.texts if t.text.startswith("bytes a rank"))
    assert said == "bytes a rank sent"
    assert wide.text_with_key("residual.powersgd-r1") is not None


def _long(steps: int) -> list:
    """The recording's first two variants stretched to ``steps`` steps, each step's bytes and
    loss its own (the run's 14 steps over and over, scaled by the step)."""
    out, hooks = [], []
    for e in load_recording(NAME):
        if e.kind == "run_started":
            table = dict(e.scenario["hook_compression"], steps=steps, fp16=True, ranks=[])
            e = dataclasses.replace(
                e, steps=steps, scenario=dict(e.scenario, hook_compression=table)
            )
        if isinstance(e, HookStep):
            if e.variant in ("allreduce", "fp16"):
                hooks.append(e)
            continue
        if e.kind not in ("hook_low_rank", "run_finished"):
            out.append(e)
    by = {(e.variant, e.step, e.rank): e for e in hooks}
    for s in range(steps):
        for v in ("allreduce", "fp16"):
            for r in (0, 1):
                e = by[(v, s % 14, r)]
                out.append(
                    dataclasses.replace(
                        e, step=s, sent=[x + s for x in e.sent], loss=e.loss * (1 + s / steps)
                    )
                )
    return out


def test_a_long_run_is_thinned_to_a_point_every_stride_steps_keeping_the_step_shown() -> None:
    steps = 2000
    events = _long(steps)
    step = 1001  # odd: not on the stride
    f = _frame(events, step)
    one = sorted((t for t in f.texts if t.text == "1"), key=lambda t: t.box.x)[1]
    end = sorted((t for t in f.texts if t.text == f"step {steps}"), key=lambda t: t.box.x)[1]
    left, right = one.box.x, end.box.right
    stride = max(1, math.ceil(steps / ((right - left) / 1.5)))
    assert stride > 1
    lines = [
        s for s in f.shapes if s.kind == "line" and s.width == 2 and s.stroke == LIGHT.rank_color(0)
    ]
    xs = sorted({round(p[0], 6) for s in lines if s.points[0][0] >= left for p in s.points})
    want = [s for s in range(step + 1) if s % stride == 0 or s == step]
    assert xs == [round(left + (right - left) * s / (steps - 1), 6) for s in want]


@pytest.mark.parametrize(
    ("w", "h", "titles"),
    [
        (1280, 720, ["loss, mean of 10 steps (log)", "bytes a rank sent a step (log)"]),
        (400, 400, ["loss (log)", "bytes a step (log)"]),
        (300, 300, ["loss (log)", "bytes (log)"]),
    ],
)
def test_each_charts_title_in_the_longest_words_that_fit(w, h, titles) -> None:
    f = _frame(load_recording(NAME), 13, w=w, h=h)
    said = [f.text_with_key(f"chart.{x}") for x in ("loss", "bytes")]
    assert [t.text for t in said] == titles
    assert all(t.font.bold and t.box.right <= w for t in said)


def test_a_narrow_stage_heads_the_bytes_column_from_the_first_phase() -> None:
    for phase in range(4):
        f = _frame(load_recording(NAME), 13, phase=phase, w=400, h=900)
        assert [t.text for t in f.texts if t.text == "bytes"] == ["bytes"], phase
