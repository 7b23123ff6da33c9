"""The data scene from recorded runs: the grid is what the ranks reported, padding and dropped
rows are marked, and DDP's average is set against one process with the reason it differs."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.data_split.shares import epochs, step_repeats
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.sharing import why_average_differs
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import STAGE_SIZES, assert_fits, assert_frame_matches_record

PADDED = "who-splits-3-ranks.jsonl"
DROPPED = "who-splits-drop-last.jsonl"


def frame(name, step, phase, w=1280, h=720, theme="light"):
    rec = record(load_recording(name))
    lesson = load_lesson("who-splits-the-data")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(step, phase), 1.0, ctx, "data_split")


def test_the_grid_names_the_ranks_that_reported_each_row() -> None:
    rec, f = frame(PADDED, 2, 0)
    header_y = next(t.box.y for t in f.texts if t.text == "row")
    column = {
        int(t.text) - 1: t.box.cx for t in f.texts if t.box.y == header_y and t.text.isdigit()
    }
    line = {int(t.text.split()[1]) - 1: t.box.y for t in f.texts if t.text.startswith("epoch ")}
    cells = {(round(t.box.cx), t.box.y): t.text for t in f.texts}
    for share in epochs(rec):
        for row in range(10):
            want = ",".join(str(r) for r, _ in share.takers.get(row, [])) or "×"
            got = cells.get((round(column[row]), line[share.epoch]), "×")
            assert got == want, (share.epoch, row)
    # ten rows on three ranks: every epoch repeats two, and each is boxed in red
    repeats = [s.repeated() for s in epochs(rec)]
    assert all(len(r) == 2 for r in repeats)
    boxed = {s.key for s in f.shapes if s.key.startswith("repeat.")}
    assert boxed == {f"repeat.{e}.{row}" for e, rows in enumerate(repeats) for row in rows}


def test_drop_last_crosses_out_the_row_no_rank_got() -> None:
    rec, f = frame(DROPPED, 2, 3)
    dropped = {t.key for t in f.texts if t.key.startswith("dropped.")}
    missing = {f"dropped.{s.epoch}.{row}" for s in epochs(rec) for row in s.missing(10)}
    assert dropped == missing and len(missing) == 3  # one row an epoch
    assert not any(s.repeated() for s in epochs(rec))  # nothing padded
    assert "✓ equal" in f.all_text()  # no repeats, mean loss: DDP's average is one process's


def test_a_repeated_row_makes_the_average_differ_and_the_stage_says_why() -> None:
    rec, f = frame(PADDED, 0, 2)
    st = rec.steps[0]
    assert step_repeats(rec, st) and st.average_is_full_batch() is False
    text = " ".join(f.all_text().split())
    assert "✗ different:" in text and "went to two ranks" in text
    assert why_average_differs(rec, st).startswith("rows ")


@pytest.mark.parametrize("name", [PADDED, DROPPED])
def test_the_numbers_are_the_recorded_ones(name) -> None:
    for step in range(3):
        rec, f = frame(name, step, 3)
        assert_frame_matches_record(f, rec, step)
        assert {k.split(".")[1] for k in f.numbers()} == {"loss", "local"}


@pytest.mark.parametrize(("w", "h", "theme"), STAGE_SIZES)
def test_nothing_overlaps_or_leaves_the_stage(w, h, theme) -> None:
    for name in (PADDED, DROPPED):
        for step in range(3):
            for phase in range(4):
                _, f = frame(name, step, phase, w, h, theme)
                assert_fits(f, theme)


def test_an_epoch_s_dropped_row_is_crossed_out_as_soon_as_its_last_step_is_shown() -> None:
    rec, f = frame(DROPPED, 0, 0)  # one step an epoch: epoch 1 is over after step 1
    first = epochs(rec)[0]
    assert {t.key for t in f.texts if t.key.startswith("dropped.")} == {
        f"dropped.0.{row}" for row in first.missing(10)
    }


def test_the_headless_report_gives_the_same_reason() -> None:
    from ddp_viz.model.report import run_report

    text = run_report(record(load_recording(PADDED)))
    assert "✗ average ≠ full batch" in text and "why: rows" in text and "two ranks" in text


def test_a_step_without_values_shows_its_losses_and_no_verdict() -> None:
    rec, f = frame("long-run-32-steps.jsonl", 24, 3)
    assert not rec.steps[24].has_values
    text = " ".join(f.all_text().split())
    assert "Not recorded at step 25" in text and "✗" not in text and "✓" not in text
    shown = f.numbers()
    assert shown["rank0.loss"] == rec.steps[24].ranks[0].loss
    assert_frame_matches_record(f, rec, 24)


LONG = "who-splits-32-steps.jsonl"  # one step an epoch: step 25 is epoch 25


@pytest.mark.parametrize(("w", "h", "theme"), STAGE_SIZES)
def test_a_long_run_shows_its_latest_epochs_and_every_rank_below_them(w, h, theme) -> None:
    rec, f = frame(LONG, 24, 3, w, h, theme)
    assert not rec.steps[24].has_values
    assert_fits(f, theme)
    labels = [t.text for t in f.texts if t.text.startswith("epoch ")]
    assert labels[-1] == "epoch 25" and 2 <= len(labels) < 25  # the current epoch, not all
    first = int(labels[0].split()[1])
    assert any(t.text == f"… epochs 1–{first - 1} not shown" for t in f.texts)
    assert labels == [f"epoch {e}" for e in range(first, 26)]
    assert {k for k in f.numbers() if k.endswith(".loss")} == {f"rank{r}.loss" for r in range(3)}
    assert "Not recorded at step 25" in " ".join(f.all_text().split())


def test_a_short_run_shows_every_epoch() -> None:
    _, f = frame(PADDED, 2, 3)
    assert [t.text for t in f.texts if t.text.startswith("epoch ")] == [
        "epoch 1",
        "epoch 2",
        "epoch 3",
    ]
    assert not any("not shown" in t.text for t in f.texts)


def test_the_not_shown_line_never_takes_the_place_of_the_one_epoch_it_hides() -> None:
    """With one epoch more than fit, the line said '… epoch 1 not shown' where epoch 1 fitted."""
    for h in range(400, 1000, 10):
        _, f = frame(LONG, 24, 3, h=h)
        texts = [t.text for t in f.texts]
        assert "… epoch 1 not shown" not in texts, h
