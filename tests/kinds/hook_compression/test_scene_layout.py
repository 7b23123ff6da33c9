"""The comm-hooks stage's layout where a reader sees it (pure): the words before a run; each
variant's bar in its row; a run still going (the charts' axes from the steps so far, a line
no further than its last step); a series that never changes (its axis half a decade either side);
the charts' axes; P and Q's blocks side by side under their labels with the note under them;
and on a middling stage the short forms of the warm-up's words and the factors' title."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

from ddp_viz.kinds.hook_compression.scene import build
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.scenes.base import FrameBuilder
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

NAME = "comm-hooks-14-steps.jsonl"
LIGHT = load_theme("light")


def _ctx(w=1280, h=720):
    lesson = load_lesson("comm-hooks")
    return SceneContext(w, h, LIGHT, lesson.phase_text, estimate_width)


def _frame(events, step=13, phase=3, w=1280, h=720):
    return build(record(events), Cursor(step, phase), 1.0, _ctx(w, h))


def test_before_a_run_the_stage_says_press_run() -> None:
    ctx = _ctx()
    f = build(record(load_recording("default-run.jsonl")), Cursor(0, 0), 1.0, ctx)
    pad, base = FrameBuilder(ctx).pad, FrameBuilder(ctx).base
    [said] = f.texts
    assert said.text == "This lesson runs the hooks side by side: press Run."
    assert (said.box.x, said.box.y, said.font.px, said.color) == (pad, pad, base, LIGHT.muted)


def test_each_bar_sits_in_its_variants_row() -> None:
    f = _frame(load_recording(NAME), w=1920, h=1080)
    labels = [t for t in f.texts if t.text.startswith(("default all-reduce", "fp16", "PowerSGD"))]
    pitch = labels[1].box.y - labels[0].box.y
    for i, label in enumerate(labels):
        bar = [s for s in f.shapes if s.key.startswith("bar.")][i]
        assert bar.fill == LIGHT.rank_color(i) and label.color == LIGHT.rank_color(i)
        assert bar.box.y == pytest.approx(label.box.y + pitch * 0.15)
        assert bar.box.h == pytest.approx(pitch * 0.6)
        assert bar.box.x > label.box.right


def _until(steps: int) -> list:
    """The recording as it stood when ``steps`` steps had been reported."""
    return [
        e
        for e in load_recording(NAME)
        if getattr(e, "step", 0) < steps and e.kind not in ("run_finished",)
    ]


def _lines(f, color):
    return [s for s in f.shapes if s.kind == "line" and s.width == 2 and s.stroke == color]


def test_a_run_in_progress_charts_the_steps_so_far() -> None:
    events = _until(6)
    f = _frame(events, step=5)
    sent = {
        (e.variant, e.step): sum(e.sent) for e in events if e.kind == "hook_step" and e.rank == 0
    }
    low, high = min(sent.values()), max(sent.values())
    texts = {t.text for t in f.texts if not t.key}
    assert f"{high / 1e3:,.1f} kB" in texts and f"{low / 1e3:,.1f} kB" in texts
    bytes_x = f.text_with_key("chart.bytes").box.x
    for i in range(6):
        lines = _lines(f, LIGHT.rank_color(i))
        assert len([s for s in lines if s.points[0][0] >= bytes_x]) == 5  # steps 1 to 6
        assert len([s for s in lines if s.points[0][0] < bytes_x]) == 5
    right = sorted((t for t in f.texts if t.text == "step 14"), key=lambda t: t.box.x)[1]
    last = max(p[0] for s in _lines(f, LIGHT.rank_color(0)) for p in s.points)
    assert last < right.box.right - 100  # six steps of fourteen: well short of the end


def test_a_series_that_never_changes_has_half_a_decade_either_side() -> None:
    """Only the default all-reduce, which sends the same bytes every step: a flat line in the
    middle of an axis from 10^-0.5 of them to 10^0.5 of them."""
    out = []
    for e in load_recording(NAME):
        if e.kind == "run_started":
            table = dict(e.scenario["hook_compression"], fp16=False, ranks=[])
            e = dataclasses.replace(e, scenario=dict(e.scenario, hook_compression=table))
        if e.kind == "hook_step" and e.variant != "allreduce":
            continue
        out.append(e)
    sent = {sum(e.sent) for e in out if e.kind == "hook_step"}
    assert len(sent) == 1
    [v] = sent
    f = _frame(out)
    texts = [t.text for t in f.texts if not t.key]
    assert f"{v * 10**0.5 / 1e3:,.1f} kB" in texts and f"{v / 10**0.5 / 1e3:,.1f} kB" in texts
    bytes_x = f.text_with_key("chart.bytes").box.x
    ys = {
        round(p[1], 6) for s in _lines(f, LIGHT.rank_color(0)) for p in s.points if p[0] > bytes_x
    }
    assert len(ys) == 1


def test_each_chart_has_its_two_axes() -> None:
    f = _frame(load_recording(NAME))
    for k, which in enumerate(("loss", "bytes")):
        one = sorted((t for t in f.texts if t.text == "1"), key=lambda t: t.box.x)[k]
        end = sorted((t for t in f.texts if t.text == "step 14"), key=lambda t: t.box.x)[k]
        left, right, bottom = one.box.x, end.box.right, one.box.y - 2
        top = min(t.box.y for t in f.texts if t.box.right == pytest.approx(left - 3))
        axes = [s.points for s in f.shapes if s.kind == "line" and s.stroke == LIGHT.muted]
        assert ((left, bottom), (right, bottom)) in axes, which
        assert ((left, top), (left, bottom)) in axes, which


def test_p_and_q_stand_side_by_side_under_their_labels_with_the_note_below() -> None:
    f = _frame(load_recording(NAME), phase=2, w=1920, h=1080)
    cells = [s for s in f.shapes if s.kind == "rect" and s.fill and not s.key]
    outlines = [
        s.box for s in f.shapes if s.kind == "rect" and not s.fill and s.stroke == LIGHT.muted
    ]
    assert len(outlines) == 4
    gaps = [b.x - a.right for a, b in itertools.pairwise(outlines)]
    px = f.text_with_key("factors.P").font.px
    assert gaps == [pytest.approx(px * 0.8)] * 3
    assert all(b.y == outlines[0].y for b in outlines)
    for label, box in zip(("exact", "P", "Q", "P·Qᵀ"), outlines, strict=True):
        said = f.text_with_key(f"factors.{label}").box
        assert said.x == box.x and said.bottom <= box.y and box.y - said.bottom < said.h
    title = f.text_with_key("factors.title").box
    assert title.bottom <= min(f.text_with_key(f"factors.{x}").box.y for x in ("P", "Q"))
    note = f.text_with_key("factors.note").box
    assert note.y >= max(b.bottom for b in outlines) and note.y - outlines[0].bottom < note.h
    assert max(b.right for b in outlines) <= 1920 and cells


def test_a_middling_stage_says_the_short_forms() -> None:
    f = _frame(load_recording(NAME), step=5, phase=2, w=900, h=900)
    assert f.text_with_key("factors.none").text == "warm-up: no P and Q yet"
    f = _frame(load_recording(NAME), step=13, phase=2, w=900, h=900)
    assert f.text_with_key("factors.title").text == "256×256 ≈ P·Qᵀ, r = 1"
    assert f.text_with_key("factors.note").text == "sends 512 values, not 65,536"
    assert math.isclose(
        f.text_with_key("factors.title").font.px, f.text_with_key("factors.P").font.px
    )
    assert f.text_with_key("factors.title").font.bold
