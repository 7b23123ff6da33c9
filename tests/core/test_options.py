"""Which scenario the window opens with, from the flags and the remembered lesson (pure)."""

from __future__ import annotations

import argparse

from ddp_viz.model.course import load_course
from ddp_viz.options import window_scenario


def flags(**kw) -> argparse.Namespace:
    base = {"scenario": None, "lesson": None, "world_size": None, "steps": None, "lr": None}
    return argparse.Namespace(**{**base, **kw})


def test_no_flags_let_the_window_open_its_remembered_lesson_with_that_lesson_s_scenario():
    assert window_scenario(flags(), "buckets") is None  # the window takes the lesson's own


def test_run_flags_change_the_remembered_lesson_not_the_first_one():
    s = window_scenario(flags(world_size="4"), "buckets")
    assert s.world_size == 4 and s.model.kind == "mlp"
    assert s.ddp == load_course().get("buckets").scenario().ddp


def test_an_unknown_remembered_lesson_falls_back_to_the_default_one():
    from ddp_viz.model.course import DEFAULT_LESSON

    s = window_scenario(flags(steps="3"), "gone")
    default = load_course().get(DEFAULT_LESSON).scenario()
    assert s.steps == 3 and s == default.with_changes(steps=3)


def test_a_named_lesson_wins_over_the_remembered_one():
    s = window_scenario(flags(lesson="every-parameter"), "buckets")
    assert s == load_course().get("every-parameter").scenario()
