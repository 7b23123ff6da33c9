"""The stage as a pure function: frames built from recorded runs, no Qt, no torch.

Widths come from a fixed-width estimate here; tests/qt/test_first_use.py repeats the layout
checks with Qt's real font metrics.
"""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record, walk
from tests.conftest import load_recording
from tests.frames import (
    assert_frame_matches_record,
    assert_inside_and_apart,
    kinds_shown,
    linear_run,
)

RECORDINGS = [
    "default-run.jsonl",
    "four-ranks-3-steps.jsonl",
    "uneven-3-ranks.jsonl",
    "mlp-2-ranks-3-steps.jsonl",
]
PROGRESS = (0.0, 0.3, 0.49, 0.5, 0.8, 1.0)


def ctx(w: float = 900, h: float = 560, theme: str = "light") -> SceneContext:
    lesson = load_lesson()
    return SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)


# phase -> (kinds that must show on every rank, kinds that must not show anywhere)
REVEAL = {
    0: (set(), {"loss", "local", "averaged", "params", "before"}),
    1: ({"loss", "local"}, {"averaged", "params", "before"}),
    3: ({"loss", "local", "averaged", "params", "before"}, set()),
}


@pytest.mark.parametrize("name", RECORDINGS)
def test_every_number_on_stage_is_the_recorded_one_and_appears_in_its_phase(name: str) -> None:
    rec = record(load_recording(name))
    for cursor in walk(rec.complete_prefix()):
        for progress in PROGRESS:
            frame = stage_frame(rec, cursor, progress, ctx())
            assert_frame_matches_record(frame, rec, cursor.step)
            shown = kinds_shown(frame)
            text = frame.all_text()
            if cursor.phase == 2:
                averaged = progress >= 0.5
                assert ("averaged" in shown) == averaged, (cursor, progress)
                assert ("average = full batch" in text or "average ≠" in text) == averaged
                assert not shown & {"params", "before"}
            else:
                must, never = REVEAL[cursor.phase]
                assert must <= shown and not (never & shown), (cursor, progress, shown)
                # digits are whole from their phase's first frame, never faded: a lecturer
                # pausing as they appear must read them
                faded = [t.key for t in frame.texts if t.value is not None and t.alpha < 255]
                assert not faded, (cursor, progress, faded[:3])
                assert ("average = full batch" in text or "average ≠" in text) == (
                    cursor.phase == 3
                )
            ranks_equal = "✓ all ranks equal" in text
            assert ranks_equal == (cursor.phase == 3 and progress >= 1.0)
            assert f"Step {cursor.step + 1} of {rec.steps_planned}" in text  # counted from 1


def test_every_rank_shows_every_parameter_in_its_columns() -> None:
    rec = record(load_recording("mlp-2-ranks-3-steps.jsonl"))
    frame = stage_frame(rec, Cursor(0, 3), 1.0, ctx(1100, 700))
    numbers = frame.numbers()
    for r in range(rec.world_size):
        for p in rec.params:
            for kind in ("local", "averaged", "params"):
                assert f"rank{r}.{kind}.{p.name}" in numbers
    # tensors are shown by their norm, and say so
    assert "‖∇0.w‖" in frame.all_text() and "∇2.b" in frame.all_text()


def test_digits_never_move_between_recorded_values() -> None:
    """Pausing mid-step shows the old and the new value, never one in between."""
    rec = record(load_recording("default-run.jsonl"))
    for progress in PROGRESS:
        numbers = stage_frame(rec, Cursor(0, 3), progress, ctx()).numbers()
        assert numbers["rank0.before.weight"] == 0.5
        assert numbers["rank0.params.weight"] == rec.steps[0].ranks[0].params["weight"][0]


def test_uneven_shards_say_why_with_both_averages_readable() -> None:
    rec = record(load_recording("uneven-3-ranks.jsonl"))
    for size in ((900, 560), (620, 420)):
        frame = stage_frame(rec, Cursor(0, 3), 1.0, ctx(*size))
        text = frame.all_text()
        assert "✗ average ≠ full batch" in text
        assert "shard average by hand: ∇w −33.17" in text and "∇w −27.5" in text
        assert "DDP averages each rank's mean-loss gradient equally" in " ".join(text.split())
        assert_inside_and_apart(frame)


@pytest.mark.parametrize("world_size", range(1, 9))
# the stage's size in the window at 1280×800, at 1920×1080, and in projector mode at 1920×1080
@pytest.mark.parametrize(
    ("size", "theme"),
    [
        ((520, 440), "light"),
        ((689, 430), "light"),
        ((879, 670), "light"),
        ((1341, 724), "projector"),
    ],
)
def test_nothing_overlaps_or_leaves_the_stage(world_size: int, size, theme: str) -> None:
    rec = linear_run(world_size, rows=8 if world_size != 3 else 4)
    for cursor in walk(1):
        # shard chips fly over the data table during phase 1: they are checked where they land
        for progress in (0.25, 0.75, 1.0) if cursor.phase else (1.0,):
            frame = stage_frame(rec, cursor, progress, ctx(*size, theme))
            assert_inside_and_apart(frame)


# a 1920×1080 projector: the stage with the window's own title bar and without
@pytest.mark.parametrize("height", [650, 684, 700, 724])
def test_projector_numbers_stay_at_least_24_px_at_eight_ranks(height: int) -> None:
    rec = linear_run(8)
    frame = stage_frame(rec, Cursor(0, 3), 1.0, ctx(1341, height, "projector"))
    numbers = [t for t in frame.texts if t.value is not None]
    assert len(numbers) == 8 * (1 + 2 * 4)  # loss, and per parameter: local, avg, before, after
    assert min(t.font.px for t in frame.texts) >= 24
    assert_inside_and_apart(frame)


@pytest.mark.parametrize("world_size", [5, 6, 7, 8])
def test_a_projector_keeps_the_reason_shards_differ(world_size: int) -> None:
    rec = linear_run(world_size, rows=world_size + 1)  # one rank has two rows
    frame = stage_frame(rec, Cursor(0, 3), 1.0, ctx(1341, 700, "projector"))
    text = " ".join(frame.all_text().split())
    assert "✗ average ≠ full batch" in text and "why: shards hold" in text
    assert min(t.font.px for t in frame.texts) >= 24
    assert_inside_and_apart(frame)


def test_a_cancelled_run_is_marked_on_the_stage() -> None:
    events = [e for e in load_recording("four-ranks-3-steps.jsonl") if e.kind != "run_finished"]
    rec = record(events)
    from ddp_viz.model import protocol

    rec.apply(protocol.RunCancelled(run=rec.run))
    text = stage_frame(rec, Cursor(2, 3), 1.0, ctx()).all_text()
    assert "■ run cancelled after 3 complete step(s)" in text
    assert "cancelled: cancelled" not in text
    # an earlier step keeps its checks; the title still says the run was cancelled
    text = stage_frame(rec, Cursor(0, 3), 1.0, ctx()).all_text()
    assert "■ run cancelled after" not in text and "✓ all ranks equal" in text
    assert "run cancelled" in text


def test_an_empty_stage_says_what_to_do() -> None:
    frame = stage_frame(None, Cursor(), 1.0, ctx())
    assert "Press Run" in frame.all_text()
    assert_inside_and_apart(frame)


def test_a_step_without_the_reference_says_when_it_is_computed() -> None:
    from ddp_viz.model.reference import reference_policy

    events = [e for e in load_recording("default-run.jsonl") if e.kind != "reference"]
    rec = record(events)
    frame = stage_frame(rec, Cursor(0, 3), 1.0, ctx(1280, 720))
    text = frame.all_text()
    assert "average = full batch" not in text and "average ≠" not in text
    assert reference_policy().split()[0] in text and "reference" in text
    assert_inside_and_apart(frame)


def test_a_long_runs_step_without_values_shows_its_losses_and_says_why() -> None:
    from ddp_viz.model.reference import values_policy

    rec = record(load_recording("long-run-32-steps.jsonl"))
    assert not rec.steps[24].has_values
    for phase in range(4):
        for progress in (0.5, 1.0):
            frame = stage_frame(rec, Cursor(24, phase), progress, ctx(1280, 720))
            assert_frame_matches_record(frame, rec, 24)
            # nothing stands for a value that was not recorded: no gradients, no parameters
            assert kinds_shown(frame) <= {"loss"}
            if phase >= 1:
                assert kinds_shown(frame) == {"loss"}
            text = frame.all_text()
            assert "not recorded at this step" in text and "all ranks equal" not in text
            assert values_policy().split()[0] in text and "10th" in text
            if progress == 1.0:  # (halfway through phase 1 the shards' chips are on their way)
                assert_inside_and_apart(frame)


def test_the_next_step_with_values_has_no_made_up_starting_point() -> None:
    """Step 30 follows nine steps without values: its parameters before the step are unknown
    and show as a dash, never as the run's initial ones."""
    rec = record(load_recording("long-run-32-steps.jsonl"))
    frame = stage_frame(rec, Cursor(29, 3), 1.0, ctx(1280, 720))
    assert_frame_matches_record(frame, rec, 29)
    before = [t for t in frame.texts if ".before." in t.key]
    assert before and all(t.text.endswith("—") for t in before)
    assert {"local", "averaged", "params"} <= kinds_shown(frame)


def test_texts_clash_on_one_layer_and_a_higher_layer_covers_the_lower() -> None:
    """A chip in flight (layer 1, on its own ground) covers the data table's cells; two texts
    on one layer in one place still clash."""
    from ddp_viz.model.frame import Font, Rect, StageFrame, Text

    cell = Text(Rect(10, 10, 60, 20), "1: 1, 3", Font(14), "#000")
    frame = StageFrame(
        200, 100, "#fff", texts=[cell, Text(Rect(30, 15, 60, 20), "rows", Font(14), "#000")]
    )
    assert len(list(frame.overlapping_texts())) == 1
    chip = Text(Rect(30, 15, 60, 20), "rows 1–2", Font(14), "#000", layer=1)
    assert list(StageFrame(200, 100, "#fff", texts=[cell, chip]).overlapping_texts()) == []
