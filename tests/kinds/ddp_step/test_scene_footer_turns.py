"""The DDP step stage's words at their edges: the line that says which tensors take turns
(the longest words that fit, the shortest shrunk to fit a stage too narrow for any, in the muted
colour); a long run's later steps (no values recorded: the footer says so and why, and keeps
saying why when space is short; values but no reference: why there is no full-batch check, from
the averages on only); the two checks on one line only when both fit with their gap; and no stray
word in the title for a state the title has no word for."""

from __future__ import annotations

import math
import re
from dataclasses import replace

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Font, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, RunStatus, record
from tests.conftest import load_recording

MLP = "mlp-2-ranks-3-steps.jsonl"
LONG = "long-run-32-steps.jsonl"
FOUR = "four-ranks-3-steps.jsonl"
PROJECTOR = load_theme("projector")
LIGHT = load_theme("light")


def ctx_of(w, h, theme, measure=estimate_width, page=0):
    ctx = SceneContext(w, h, theme, load_lesson().phase_text, measure)
    return replace(ctx, page=page)


def second_label(name: str) -> str:
    """The second tensor's label, from the raw run_started event (‖·‖ for more than one value)."""
    start = next(e for e in load_recording(name) if e.kind == "run_started")
    p = start.params[1]
    short = re.sub(r"weight$", "w", re.sub(r"bias$", "b", p["name"]))
    return short if math.prod(p["shape"]) == 1 else f"‖{short}‖"


# --- the tensors' turns --------------------------------------------------------------------


def test_too_narrow_for_any_words_the_shortest_shrink_to_fit_in_the_muted_colour() -> None:
    rec = record(load_recording(MLP))
    label = second_label(MLP)
    for w in (250, 220):
        f = stage_frame(rec, Cursor(0, 3), 1.0, ctx_of(w, 700, PROJECTOR, page=1))
        said = f.text_with_key("turns")
        assert said.text == f"{label} (2/4) · T"  # the shortest words, not the middle ones
        pad = said.box.x
        room = w - 2 * pad
        floor = Font(24)  # the projector's floor
        natural = estimate_width(said.text, floor)
        assert natural > room  # not even the shortest fits at the floor
        assert math.isclose(said.font.px, 24 * room / natural * 0.98, rel_tol=1e-9)
        assert said.box.x + said.box.w <= w - pad
        assert said.color == PROJECTOR.muted


def test_wide_enough_for_the_shortest_words_at_the_floor_they_keep_the_floor() -> None:
    rec = record(load_recording(MLP))
    f = stage_frame(rec, Cursor(0, 3), 1.0, ctx_of(400, 700, PROJECTOR, page=1))
    said = f.text_with_key("turns")
    assert said.text == f"{second_label(MLP)} (2/4) · T"
    assert said.font.px == 24 and said.color == PROJECTOR.muted


def test_words_that_fit_exactly_are_said_at_the_floor() -> None:
    """The middle words measured exactly as wide as the room: they are said, unshrunk."""
    rec = record(load_recording(MLP))
    label = second_label(MLP)
    middle = f"tensor 2 of 4: {label} · T: next"
    w = 700
    pad = stage_frame(rec, Cursor(0, 3), 1.0, ctx_of(w, 700, PROJECTOR, page=1))
    pad = pad.text_with_key("turns").box.x
    room = w - 2 * pad

    def measure(text: str, font: Font) -> float:
        return room if text == middle else estimate_width(text, font)

    f = stage_frame(rec, Cursor(0, 3), 1.0, ctx_of(w, 700, PROJECTOR, measure, page=1))
    said = f.text_with_key("turns")
    assert said.text == middle and said.font.px == 24


# --- a long run's later steps ----------------------------------------------------------------


def steps_with_values(name: str) -> list[int]:
    """0-based steps whose parameters were recorded, from the raw params events."""
    return sorted({e.step for e in load_recording(name) if e.kind == "params"})


def steps_with_reference(name: str) -> list[int]:
    return sorted({e.step for e in load_recording(name) if e.kind == "reference"})


POLICY = (
    "Gradients and parameters are recorded for steps 1–20, every 10th step and the last; "
    "the loss, buckets and timings for every step."
)


def words_of(f, color) -> str:
    return " ".join(t.text for t in f.texts if t.color == color)


def test_a_step_without_values_says_so_and_why_in_the_muted_colour() -> None:
    have = steps_with_values(LONG)
    assert 20 not in have and 19 in have and 29 in have  # steps 1–20, every 10th, the last
    rec = record(load_recording(LONG))
    for h in (1000, 160):  # at 160 the caption has given way; the reason stays
        f = stage_frame(rec, Cursor(20, 3), 1.0, ctx_of(900, h, LIGHT))
        head = [t for t in f.texts if t.text.startswith("○ gradients")]
        assert [t.text for t in head] == ["○ gradients and parameters not recorded at this step"]
        assert head[0].color == LIGHT.muted
        below = sorted(
            (t for t in f.texts if t.box.y > head[0].box.y and t.color == LIGHT.muted),
            key=lambda t: t.box.y,
        )
        assert " ".join(t.text for t in below).startswith(POLICY)
        assert "XX" not in f.all_text()
    f = stage_frame(rec, Cursor(20, 3), 1.0, ctx_of(900, 160, LIGHT))
    assert "optimizer.step() is local" not in f.all_text()  # the caption did give way


def test_values_without_a_reference_say_why_once_the_averages_show() -> None:
    have, refs = steps_with_values(LONG), steps_with_reference(LONG)
    assert 29 in have and 29 not in refs
    rec = record(load_recording(LONG))
    assert refs == list(range(20))  # steps 1–20 have the reference in this run
    why = "The full-batch reference is computed for steps 1–20 and then for every "
    for h in (1000, 160):
        f = stage_frame(rec, Cursor(29, 3), 1.0, ctx_of(900, h, LIGHT))
        eq = next(t for t in f.texts if t.text.endswith("all ranks equal"))
        below = [t for t in f.texts if t.box.y > eq.box.y and t.color == LIGHT.muted]
        said = " ".join(t.text for t in sorted(below, key=lambda t: t.box.y))
        assert said.startswith(why), said
    early = stage_frame(rec, Cursor(29, 1), 1.0, ctx_of(900, 1000, LIGHT))
    assert "reference" not in early.all_text().lower()


# --- the two checks: one line or two ---------------------------------------------------------


def checks_at(width_of_both: float | None):
    """The two checks' texts at the end of step 2 of four ranks, with the two checks' words
    together measured as ``width_of_both`` minus the room (None: as estimated)."""
    rec = record(load_recording(FOUR))
    both = "✓ all ranks equal✓ average = full batch"
    f = stage_frame(rec, Cursor(1, 3), 1.0, ctx_of(1800, 1000, LIGHT))
    eq = next(t for t in f.texts if t.text == "✓ all ranks equal")
    pad, px = eq.box.x, eq.font.px
    room = 1800 - 2 * pad
    if width_of_both is None:
        return eq, next(t for t in f.texts if t.text == "✓ average = full batch")
    target = room - width_of_both * px
    while target + px * 1.5 > room and width_of_both >= 1.5:
        target = math.nextafter(target, -math.inf)

    def measure(text: str, font: Font) -> float:
        return target if text == both else estimate_width(text, font)

    f = stage_frame(rec, Cursor(1, 3), 1.0, ctx_of(1800, 1000, LIGHT, measure))
    eq = next(t for t in f.texts if t.text == "✓ all ranks equal")
    avg = next(t for t in f.texts if t.text == "✓ average = full batch")
    assert eq.font.px == px
    return eq, avg


def test_the_checks_share_a_line_when_both_fit_with_their_gap() -> None:
    eq, avg = checks_at(1.5)  # exactly the room with the gap of 1.5 em
    assert eq.box.y == avg.box.y and avg.box.x > eq.box.x
    assert eq.color == avg.color == LIGHT.ok


def test_the_checks_take_two_lines_when_the_gap_does_not_fit() -> None:
    eq, avg = checks_at(1.0)  # the words fit, the words and their 1.5 em gap do not
    assert avg.box.y > eq.box.y and avg.box.x == eq.box.x


# --- the title ---------------------------------------------------------------------------


def test_a_state_with_no_word_adds_none_to_the_title() -> None:
    rec = record(load_recording(FOUR))
    rec.status = RunStatus.IDLE
    f = stage_frame(rec, Cursor(1, 2), 1.0, ctx_of(1800, 1000, LIGHT))
    right = next(t for t in f.texts if "rank(s), gloo" in t.text)
    assert right.text == " · 4 rank(s), gloo"
    assert "None" not in f.all_text() and "XXXX" not in f.all_text()
