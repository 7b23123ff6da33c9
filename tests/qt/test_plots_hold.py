"""While a run is replayed the plots show no point the stage has not reached (issue 33, 4)."""

from __future__ import annotations

import pytest

from ddp_viz.model.timeline import Cursor, walk
from tests.conftest import load_recording
from tests.qt_helpers import feed


def loss_visible(step: int, c: Cursor, progress: float) -> bool:
    """A step's loss is the backward phase's ("local", phase 1) result."""
    return c.step > step or (c.step == step and (c.phase > 1 or (c.phase == 1 and progress >= 1)))


def params_visible(step: int, c: Cursor, progress: float) -> bool:
    """The weights after a step are the optimizer step's ("step", phase 3) result."""
    return c.step > step or (c.step == step and c.phase == 3 and progress >= 1)


def xs_of(curve) -> list[float]:
    xs = curve.getData()[0]
    return [] if xs is None else [float(x) for x in xs]


def move(window, cursor: Cursor, progress: float) -> None:
    player = window.player
    player.cursor, player.progress = cursor, progress
    player._emit(entered=True)


@pytest.mark.parametrize("name", ["four-ranks-3-steps.jsonl", "default-run.jsonl"])
def test_the_plots_show_no_point_past_the_stage(window, qtbot, name) -> None:
    feed(window, load_recording(name))
    rec = window.session.record
    qtbot.waitUntil(lambda: not window.player.playing)  # autoplay to the end first
    window.player.pause()
    curves = window.plots._curves
    steps = rec.complete_prefix()
    for cursor in walk(steps):
        for progress in (0.0, 0.5, 1.0):
            move(window, cursor, progress)
            for r in range(rec.world_size):
                xs = xs_of(curves[f"loss{r}"])
                want = [s + 1 for s in range(steps) if loss_visible(s, cursor, progress)]
                assert xs == want, (cursor, progress)
                px = xs_of(curves[f"p0:{r}"])
                want = [0] + [s + 1 for s in range(steps) if params_visible(s, cursor, progress)]
                assert px == want, (cursor, progress)
            full = xs_of(curves["full"])
            assert all(loss_visible(int(x) - 1, cursor, progress) for x in full)
    # at the first phase of the run nothing of it is plotted but the starting weights
    move(window, Cursor(0, 0), 0.0)
    assert xs_of(curves["loss0"]) == [] and xs_of(curves["p0:0"]) == [0]


def test_following_a_long_run_plots_every_complete_step(window) -> None:
    feed(window, load_recording("long-run-32-steps.jsonl"))  # fast mode: the newest step
    assert window.player.follow_latest
    xs = xs_of(window.plots._curves["loss0"])
    assert xs == list(range(1, 33))


def test_holding_a_streaming_run_leaves_the_pushes_to_its_own_refreshes(window) -> None:
    """Following a run that streams, the stage's turn only marks the plots out of date: each
    refresh then pushes one plot, never all three in the stage's turn."""
    feed(window, load_recording("default-run.jsonl"))
    plots = window.plots
    pushed: list[str] = []
    push = plots._push
    plots._push = lambda group: (pushed.append(group), push(group))
    window.player.pause()
    plots.hold_to(Cursor(1, 3), 1.0)  # a replay's hold: pushed at once
    assert sorted(pushed) == ["loss", "param", "surface"]
    pushed.clear()
    plots.hold_to(None, later=True)
    assert pushed == [] and plots._stale == {"loss", "param", "surface"}
    plots.hold_to(Cursor(1, 3), 1.0)
    pushed.clear()
    plots.hold_to(None)  # not streaming: at once, or nothing would push them
    assert sorted(pushed) == ["loss", "param", "surface"]
