"""The uneven-inputs scene from recorded runs: the lanes show who trained, who had no batch,
who got stuck, Join's zeros, and gloo's own error once the timeout ended the stall."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import STAGE_SIZES, assert_fits

STALL, JOIN = "uneven-stall.jsonl", "uneven-join.jsonl"


def frame(name, step, phase=3, w=1280, h=720, theme="light", events=None):
    rec = record(events if events is not None else load_recording(name))
    lesson = load_lesson("uneven-inputs")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(step, phase), 1.0, ctx, "uneven")


def test_the_stall_shows_who_ran_out_who_is_stuck_and_gloos_words() -> None:
    rec, f = frame(STALL, 2)
    assert rec.complete_prefix() == 3 and rec.parts["uneven"].out_of_data == {0: 3}
    text = " ".join(f.all_text().split())
    assert f.text_with_key("rank0.step3") is None  # keys are on the shapes: look there
    shapes = {s.key for s in f.shapes}
    assert {"rank0.step3", "rank1.step3"} <= shapes
    assert "no batch" in text and "stuck" in text
    for r, stall in rec.parts["uneven"].stalled.items():
        line = f.text_with_key(f"stalled.{r}")
        assert line is not None and line.value == stall.waited_s
        assert "Timed out waiting 4000ms" in stall.error
    assert "Timed out waiting 4000ms for recv operation" in text  # gloo's words, on screen
    for s in range(3):
        for r in range(2):
            assert f.numbers()[f"rank{r}.step{s}.loss"] == rec.steps[s].ranks[r].loss


def test_a_heartbeat_is_shown_while_the_run_still_waits() -> None:
    events = [e for e in load_recording(STALL) if e.kind not in ("stalled", "run_finished")]
    rec, f = frame(STALL, 0, events=events)  # from the first step on: it is happening now
    beat = rec.parts["uneven"].waiting[1]
    line = f.text_with_key("waiting.1")
    assert line.value == beat.now - beat.since
    assert line.text == f"rank 1 waiting in all-reduce for {beat.now - beat.since:.1f} s"


def test_join_shows_the_zeros_and_the_average_that_came_back() -> None:
    rec, f = frame(JOIN, 3)
    assert rec.complete_prefix() == 4
    shadow = rec.parts["uneven"].shadows[(3, 0)]
    assert all(v == [0.0] for v in shadow.grads.values())
    assert f.numbers()["rank0.step3.zeros"] == 0.0
    text = " ".join(f.all_text().split())
    assert "Join: sent" in text and "average came back weight −13.28" in text
    final = f.text_with_key("final")
    assert final.text.startswith("after the loop and the barrier: weight 1.758")
    assert "✓ the same on every rank (Join copied rank 1's" in text
    # beside a single float64 process on the same rows, as rank 0 computed it
    solo = f.text_with_key("one_process")
    assert solo.text.startswith("one process, float64, the same rows, each step ÷ 2")
    assert 0 <= solo.value <= 1e-6 and "✓ equal" in text
    assert f"weight {fmt(rec.parts['uneven'].one_process['weight'][0])}" in text
    # the average is rank 1's own gradient over the initial world size
    assert shadow.averaged["weight"][0] == pytest.approx(
        rec.steps[3].ranks[1].local["weight"][0] / 2, rel=1e-6
    )


@pytest.mark.parametrize(("w", "h", "theme"), STAGE_SIZES)
def test_nothing_overlaps_or_leaves_the_stage(w, h, theme) -> None:
    for name, steps in ((STALL, 3), (JOIN, 4)):
        for step in range(steps):
            for phase in range(4):
                _, f = frame(name, step, phase, w, h, theme)
                assert_fits(f, theme)


def test_the_status_bar_says_the_run_stalled() -> None:
    from ddp_viz.model.session import status_text

    text = status_text(record(load_recording(STALL)))
    assert text.startswith("Run 1 stalled after 3 step(s): rank 0 in barrier, rank 1 in all-reduce")
    assert "stalled" not in status_text(record(load_recording(JOIN)))


def test_a_peer_whose_connection_the_first_timeout_closed_is_explained() -> None:
    from dataclasses import replace

    closed = "[…/pair.cc:553] Connection closed by peer [127.0.0.1]:14250. This is typically…"
    events = [
        replace(e, error=closed) if e.kind == "stalled" and e.rank == 1 else e
        for e in load_recording(STALL)
    ]
    _, f = frame(STALL, 2, events=events)
    text = " ".join(f.all_text().split())
    assert "rank 1 waited 4.0 s in all-reduce; its peer's timeout closed the connection" in text
    assert "rank 0 waited 4.0 s in barrier; the timeout ended it" in text
