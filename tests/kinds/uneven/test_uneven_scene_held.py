"""The uneven-inputs stage shows nothing of a later step while it plays an earlier one
(issue 33, item 4: step 4's "no batch / stuck" was on the stage during step 1)."""

from __future__ import annotations

import pytest

from ddp_viz.model.timeline import Cursor, RunStatus, walk
from tests.conftest import load_recording
from tests.kinds.uneven.test_uneven_scene import JOIN, STALL, frame

LATER = ("no batch", "stuck", "gloo said", "Join: sent", "had no batch left", "after the loop")


@pytest.mark.parametrize("name", [STALL, JOIN])
@pytest.mark.parametrize("phase", range(4))
@pytest.mark.parametrize("progress", [0.0, 0.5, 1.0])
def test_step_one_shows_no_text_of_a_later_step(name, phase, progress) -> None:
    rec, _ = frame(name, 0)
    f = _at(name, Cursor(0, phase), progress)
    text = " ".join(f.all_text().split())
    for words in LATER:
        assert words not in text, (words, phase, progress)
    for s in range(1, len(rec.steps)):  # no later loss either
        assert not any(k.startswith(f"rank{r}.step{s}") for r in range(2) for k in f.numbers())


def _at(name: str, cursor: Cursor, progress: float):
    from ddp_viz.model.course import load_lesson
    from ddp_viz.model.frame import estimate_width
    from ddp_viz.model.scenes import SceneContext, stage_frame
    from ddp_viz.model.theme import load_theme
    from ddp_viz.model.timeline import record

    rec = record(load_recording(name))
    ctx = SceneContext(
        1280, 720, load_theme("light"), load_lesson("uneven-inputs").phase_text, estimate_width
    )
    return stage_frame(rec, cursor, progress, ctx, "uneven")


@pytest.mark.parametrize("name", [STALL, JOIN])
def test_what_came_after_shows_once_every_finished_step_was_shown(name) -> None:
    """Walking the replay: each later thing appears where its step is shown, never before."""
    rec, _ = frame(name, 0)
    n = rec.complete_prefix()
    seen_at = {}
    for cursor in walk(n):
        for progress in (0.0, 1.0):
            text = " ".join(_at(name, cursor, progress).all_text().split())
            for words in LATER:
                if words in text:
                    seen_at.setdefault(words, (cursor, progress))
    end = (Cursor(n - 1, 3), 1.0)
    if name == STALL:  # the stall is in the step after the last finished one
        assert seen_at == {w: end for w in ("no batch", "stuck", "gloo said")}
    else:  # rank 0 ran out in step 4: its box and Join's zeros come in step 4's phases
        assert seen_at["no batch"] == (Cursor(3, 0), 1.0)
        assert seen_at["Join: sent"] == (Cursor(3, 2), 1.0)
        assert seen_at["after the loop"] == end


@pytest.mark.parametrize("phase", range(4))
def test_a_live_stall_shows_its_heartbeat_but_not_step_4_during_step_1(phase) -> None:
    """Live, the stall is reached in milliseconds while the stage still plays step 1: the
    ranks' heartbeat (what they do now) shows, step 4's boxes wait for the stage."""
    from ddp_viz.model.course import load_lesson
    from ddp_viz.model.frame import estimate_width
    from ddp_viz.model.scenes import SceneContext, stage_frame
    from ddp_viz.model.theme import load_theme

    events = [e for e in load_recording(STALL) if e.kind not in ("stalled", "run_finished")]
    rec, _ = frame(STALL, 0, events=events)
    assert rec.status is RunStatus.RUNNING and rec.parts["uneven"].waiting
    ctx = SceneContext(
        1280, 720, load_theme("light"), load_lesson("uneven-inputs").phase_text, estimate_width
    )
    text = " ".join(stage_frame(rec, Cursor(0, phase), 0.5, ctx, "uneven").all_text().split())
    assert "waiting in" in text
    assert "no batch" not in text and "stuck" not in text
    end = stage_frame(rec, Cursor(rec.complete_prefix() - 1, 3), 1.0, ctx, "uneven")
    assert "no batch" in end.all_text() and "stuck" in end.all_text()
