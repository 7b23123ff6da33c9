"""The ring lesson's code view lights the loop the stage is in (issue 33, item 8): during
reduce-scatter it also lit the all-gather loop's lines, which hold the same texts."""

from __future__ import annotations

from ddp_viz.kinds.collective.model import ring_steps
from ddp_viz.model.course import load_lesson
from tests.conftest import load_recording
from tests.kinds.collective.test_ring_scene import FOUR, frame
from tests.qt_helpers import feed


def _loop_of(lesson, line: int) -> str:
    listing = lesson.code.splitlines()
    rs = next(i for i, t in enumerate(listing, 1) if "# reduce-scatter" in t)
    ag = next(i for i, t in enumerate(listing, 1) if "# all-gather" in t)
    return "reduce-scatter" if rs <= line < ag else "all-gather" if line >= ag else "before"


def test_each_half_lights_its_own_loop() -> None:
    lesson = load_lesson("all-reduce")
    for phase in ("shards", "local", "allreduce", "step"):
        both = lesson.lines_for(phase)
        assert {_loop_of(lesson, n) for n in both} == {"reduce-scatter", "all-gather"}
        for half in ("reduce-scatter", "all-gather"):
            lines = lesson.lines_for(phase, section=half)
            assert lines and {_loop_of(lesson, n) for n in lines} == {half}, (phase, half)


def test_the_ring_stage_names_its_half() -> None:
    assert frame(FOUR, 0, 1)[1].section == "reduce-scatter"
    assert frame(FOUR, ring_steps(4) - 1, 1)[1].section == "all-gather"


def test_the_code_view_follows_the_stage_s_half(qtbot, make_window) -> None:
    window = make_window(lesson_id="all-reduce")
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording(FOUR))
    lesson = window.lesson
    for step, half in ((0, "reduce-scatter"), (ring_steps(4) - 1, "all-gather")):
        window.player.seek_step(step)  # phase 4 of that step: "for s in range"
        window.player.step_back()  # phase 3: the add or the copy
        lines = window.code_view.current_lines
        assert lines and {_loop_of(lesson, n) for n in lines} == {half}, (step, lines)
