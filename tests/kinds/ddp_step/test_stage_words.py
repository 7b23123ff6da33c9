"""What the DDP step stage says around its lanes: the run's state in the title (live, recorded,
finished, failed, cancelled, in the bad colour when it ended early), the checks' marks and
colours as the step plays, a failure's reason at the run's last step only, and the numbers of a
✗ "average ≠ full batch" from the raw reference event."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.protocol import RunFailed
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, RunStatus, record
from tests.conftest import load_recording

FOUR = "four-ranks-3-steps.jsonl"
THEME = load_theme("light")


def frame_at(rec, step: int, phase: int, progress: float = 1.0, w: int = 1800, h: int = 1000):
    ctx = SceneContext(w, h, THEME, load_lesson().phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, phase), progress, ctx)


def text_of(frame, start: str):
    return next(t for t in frame.texts if t.text.startswith(start))


@pytest.mark.parametrize(
    ("status", "replayed", "said", "color"),
    [
        (RunStatus.RUNNING, False, "live run", THEME.muted),
        (RunStatus.FINISHED, True, "recorded run", THEME.muted),
        (RunStatus.FINISHED, False, "run finished", THEME.muted),
        (RunStatus.FAILED, False, "run failed", THEME.bad),
        (RunStatus.CANCELLED, True, "run cancelled", THEME.bad),
    ],
)
def test_the_title_says_the_runs_state(status, replayed, said, color) -> None:
    rec = record(load_recording(FOUR))
    rec.status, rec.replayed = status, replayed
    frame = frame_at(rec, 1, 2)
    title = text_of(frame, "Step 2 of 3  ·  ")
    assert title.text == "Step 2 of 3  ·  3 · all-reduce inside loss.backward()"
    right = text_of(frame, said)
    assert right.text == f"{said} · 4 rank(s), gloo" and right.color == color


def test_all_ranks_equal_is_earned_at_the_end_of_the_step_in_its_colour() -> None:
    rec = record(load_recording(FOUR))
    before = text_of(frame_at(rec, 1, 3, 0.9), "○ all ranks equal")
    assert before.color == THEME.muted
    done = text_of(frame_at(rec, 1, 3), "✓ all ranks equal")
    assert done.color == THEME.ok
    # the last rank's parameters off: the headline turns, in the bad colour
    rs = rec.steps[1].ranks[3]
    rs.params = {k: [v[0] + 1.0] for k, v in rs.params.items()}
    bad = text_of(frame_at(rec, 1, 3), "✗ ranks differ")
    assert bad.color == THEME.bad
    assert "all ranks equal" not in frame_at(rec, 1, 3).all_text()


def failed(events):
    out = []
    for e in events:
        if e.kind in ("params", "timing") and (e.step, e.rank) == (2, 3):
            continue
        if e.kind == "run_finished":
            e = RunFailed(run=e.run, reason="rank 3 exited with code 1 in step 3", rank=3)
        out.append(e)
    return out


def test_a_failure_is_said_at_the_runs_last_step_with_its_reason() -> None:
    rec = record(failed(load_recording(FOUR)))
    assert rec.complete_prefix() == 2
    for step in (1, 2):  # the last complete step and the one that broke
        frame = frame_at(rec, step, 3)
        head = text_of(frame, "✗ run failed")
        assert head.text == "✗ run failed after 2 complete step(s)" and head.color == THEME.bad
        reason = text_of(frame, "rank 3 exited")
        assert reason.text == "rank 3 exited with code 1 in step 3"
        assert reason.color == THEME.bad
    # an earlier step keeps the checks it earned
    first = frame_at(rec, 0, 3).all_text()
    assert "✓ all ranks equal" in first and "✗ run failed" not in first
    assert "rank 3 exited" not in first


def test_a_cancelled_run_says_so_without_a_reason() -> None:
    rec = record(load_recording(FOUR))
    rec.status, rec.reason = RunStatus.CANCELLED, "cancelled"
    frame = frame_at(rec, 2, 3)
    head = text_of(frame, "■ run cancelled")
    assert head.text == "■ run cancelled after 3 complete step(s)" and head.color == THEME.bad
    assert not [t for t in frame.texts if t.text == "cancelled"]


def test_average_unequal_to_the_full_batch_lists_the_raw_numbers() -> None:
    events = load_recording("uneven-3-ranks.jsonl")
    ref = next(e for e in events if e.kind == "reference" and e.step == 0)
    avg = next(e for e in events if e.kind == "averaged_grad" and e.step == 0 and e.rank == 0)
    rec = record(events)
    text = " ".join(frame_at(rec, 0, 3).all_text().split())

    def listing(grads) -> str:
        return f"∇w {fmt(grads['weight'][0])}, ∇b {fmt(grads['bias'][0])}"

    assert (
        f"DDP's average: {listing(avg.grads)} = the shard average by hand: "
        f"{listing(ref.manual_average)}"
    ) in text
    assert f"full batch over all rows (reference): {listing(ref.full_batch_grads)}" in text
    assert "why: " in text
    verdict = text_of(frame_at(rec, 0, 3), "✗ average ≠ full batch")
    assert verdict.color == THEME.bad
    # the ✓ side lists the reference alone
    ok = load_recording("default-run.jsonl")
    ref = next(e for e in ok if e.kind == "reference" and e.step == 0)
    text = " ".join(frame_at(record(ok), 0, 3).all_text().split())
    assert f"full-batch reference (one process, float64): {listing(ref.full_batch_grads)}" in text
    assert text_of(frame_at(record(ok), 0, 3), "✓ average = full batch").color == THEME.ok


@pytest.mark.parametrize(
    ("w", "h", "theme", "one_line"),
    [(1800, 1000, "light", True), (560, 480, "projector", False), (400, 600, "projector", False)],
)
def test_the_two_checks_share_a_line_while_it_holds_them_each_in_its_colour(
    w, h, theme, one_line
) -> None:
    ctx = SceneContext(w, h, load_theme(theme), load_lesson().phase_text, estimate_width)
    frame = stage_frame(record(load_recording(FOUR)), Cursor(1, 2), 1.0, ctx)
    eq = text_of(frame, "○ all ranks equal")
    avg = text_of(frame, "✓ average = full batch")
    assert (eq.box.y == avg.box.y) == one_line
    assert eq.box.x < avg.box.x if one_line else avg.box.y > eq.box.y
    assert eq.color == load_theme(theme).muted and avg.color == load_theme(theme).ok


def test_a_caption_cut_for_room_says_it_was_cut() -> None:
    ctx = SceneContext(560, 480, load_theme("projector"), load_lesson().phase_text, estimate_width)
    frame = stage_frame(record(load_recording(FOUR)), Cursor(1, 2), 1.0, ctx)
    cut = [t for t in frame.texts if t.text.endswith(" …")]
    assert len(cut) == 1 and cut[0].text.startswith("Inside loss.backward()")
    wide = replace(ctx, width=1800, height=1000)
    whole = stage_frame(record(load_recording(FOUR)), Cursor(1, 2), 1.0, wide)
    assert not [t for t in whole.texts if t.text.endswith(" …")]
