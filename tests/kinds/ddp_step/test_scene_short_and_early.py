"""The DDP step stage on a stage too short for its words, a step not reported yet, and a
progress past the end: the reason a long run's later step shows less stays when the type
has shrunk to the floor and every other detail has gone; a step the ranks have not reported
says it is waiting; a progress beyond 1 draws the step's end."""

from __future__ import annotations

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

LONG = "long-run-32-steps.jsonl"
FOUR = "four-ranks-3-steps.jsonl"
LIGHT = load_theme("light")


def ctx_of(w, h):
    return SceneContext(w, h, LIGHT, load_lesson().phase_text, estimate_width)


def raw_steps(name: str, kind: str) -> set[int]:
    return {e.step for e in load_recording(name) if e.kind == kind}


def test_the_reason_stays_at_the_floor_when_space_is_short() -> None:
    assert 20 not in raw_steps(LONG, "params")  # no values at step 21
    assert 29 in raw_steps(LONG, "params") and 29 not in raw_steps(LONG, "reference")
    rec = record(load_recording(LONG))
    for step, reason in (
        (20, "Gradients and parameters are recorded for steps 1–20, every 10th step"),
        (29, "The full-batch reference is computed for steps 1–20 and then for every "),
    ):
        for h in (130, 120):  # the headings at the floor (11 px), the caption gone
            f = stage_frame(rec, Cursor(step, 3), 1.0, ctx_of(900, h))
            title = next(t for t in f.texts if t.text.startswith(f"Step {step + 1} of 32"))
            assert title.font.px < 16.8  # the headings did shrink
            muted = [t for t in f.texts if t.color == LIGHT.muted and t.font.px == 11]
            assert any(t.text.startswith(reason) for t in muted), (step, h)
            assert "optimizer.step() is local" not in f.all_text()


def test_a_step_not_reported_yet_says_the_stage_waits() -> None:
    rec = record(load_recording(FOUR))
    steps = len(raw_steps(FOUR, "params"))
    assert steps == 3 == len(rec.steps)
    for phase in (1, 3):
        f = stage_frame(rec, Cursor(steps, phase), 0.5, ctx_of(1200, 700))
        text = f.all_text()
        assert "Waiting for the ranks to report this step…" in text
        assert f"Step {steps + 1} of 3" in text and "all ranks equal" not in text


def test_a_progress_past_the_end_draws_the_end() -> None:
    rec = record(load_recording(FOUR))
    for phase in (1, 2, 3):
        end = stage_frame(rec, Cursor(1, phase), 1.0, ctx_of(1200, 700))
        for past in (1.3, 1.7, 2.0):
            assert stage_frame(rec, Cursor(1, phase), past, ctx_of(1200, 700)) == end
