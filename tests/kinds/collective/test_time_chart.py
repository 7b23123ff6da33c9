"""The ring lesson's time chart against the raw timing events: one dot per algorithm and length,
placed on a log axis of lengths and a linear axis of milliseconds from 0 to the slowest, joined
in its algorithm's colour; the lengths written under the axis, the slowest time at its top,
and a shorter title on a narrow stage."""

from __future__ import annotations

import math

import pytest

from ddp_viz.kinds.collective.model import ring_steps
from ddp_viz.model.frame import fmt
from ddp_viz.model.theme import load_theme
from tests.conftest import load_recording
from tests.kinds.collective.test_ring_scene import EIGHT, FOUR, TWO, frame

COLOURS = {"naive": "bad", "ring": "accent", "all_reduce": "muted"}


def timings(name: str) -> dict[tuple[str, int], float]:
    out = {}
    for e in load_recording(name):
        if e.kind == "collective_timing":
            out[(e.algo, e.length)] = e.seconds  # a later one of the same stands
    return out


@pytest.mark.parametrize("name", [TWO, FOUR, EIGHT])
def test_each_dot_is_its_length_on_a_log_axis_and_its_time_on_a_linear_one(name: str) -> None:
    times = timings(name)
    world = next(e for e in load_recording(name) if e.kind == "run_started").world_size
    _, f = frame(name, ring_steps(world) - 1, 3, w=1800, h=1000)
    theme = load_theme("light")
    dots = {s.key: s for s in f.shapes if s.key.startswith("time.")}
    assert set(dots) == {f"time.{a}.{n}" for a, n in times}
    lengths = sorted({n for _, n in times})
    low, high = math.log10(lengths[0]), math.log10(lengths[-1])
    xs = {n: dots[f"time.{a}.{n}"].box.cx for a, n in times}
    left, right = xs[lengths[0]], xs[lengths[-1]]
    for n, x in xs.items():
        assert x == pytest.approx(left + (right - left) * (math.log10(n) - low) / (high - low))
    # heights: in proportion to the time, from the axis at 0 up to the slowest
    slowest = max(times, key=times.get)
    fastest = min(times, key=times.get)
    y_top = dots[f"time.{slowest[0]}.{slowest[1]}"].box.cy
    y_low = dots[f"time.{fastest[0]}.{fastest[1]}"].box.cy
    s_top, s_low = times[slowest], times[fastest]
    bottom = (s_top * y_low - s_low * y_top) / (s_top - s_low)  # where 0 ms would be
    for (algo, n), s in times.items():
        dot = dots[f"time.{algo}.{n}"]
        assert bottom - dot.box.cy == pytest.approx((bottom - y_top) * s / s_top, abs=0.01)
        assert dot.fill == getattr(theme, COLOURS[algo])
    top_label = next(t for t in f.texts if t.key == "time.axis")
    assert top_label.text == fmt(s_top * 1000, 3)
    assert top_label.box.y == pytest.approx(y_top, abs=1)  # level with the slowest dot
    under = [t.text for t in f.texts if t.text in {f"{n:,}" for n in lengths}]
    assert under == [f"{n:,}" for n in lengths]
    legend = [t for t in f.texts if t.text.startswith("— ")]
    assert [t.text for t in legend] == ["— naive", "— ring", "— dist.all_reduce"]
    assert [t.color for t in legend] == [getattr(theme, c) for c in COLOURS.values()]


def test_a_narrow_chart_has_the_short_title() -> None:
    _, wide = frame(FOUR, ring_steps(4) - 1, 3, w=1800, h=1000)
    assert "time of one all-reduce in ms, by values per rank" in [t.text for t in wide.texts]
    _, narrow = frame(FOUR, ring_steps(4) - 1, 3, w=400, h=900)
    texts = [t.text for t in narrow.texts]
    assert "ms per all-reduce" in texts
    assert "time of one all-reduce in ms, by values per rank" not in texts
