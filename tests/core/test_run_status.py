"""The status bar's line about a run that ended (model/run_status.py, pure), word for word, on
a recorded 4-rank run and on copies of it with one thing moved: the last rank's parameters or
average off, no reference, no time, no complete step, a note before or after. The expected
counts come from the raw events."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.run_status import playing_text, status_text, steps_done
from ddp_viz.model.timeline import RunStatus, record
from tests.conftest import load_recording

NAME = "four-ranks-3-steps.jsonl"


def events(drop: str = "") -> list[protocol.Event]:
    return [e for e in load_recording(NAME) if e.kind != drop]


def nudged(kind: str, step: int, rank: int = 3, by: float = 1e-3) -> list[protocol.Event]:
    """The recording with the last rank's ``kind`` tensors (params or averaged) at ``step``
    moved by ``by``: past the 1e-6 the ranks must agree to, and the 1e-5 of the reference."""
    out = []
    for e in load_recording(NAME):
        if e.kind == kind and e.step == step and e.rank == rank:
            key = "params" if kind == "params" else "grads"
            moved = {n: [x + by for x in v] for n, v in getattr(e, key).items()}
            e = dataclasses.replace(e, **{key: moved})
        out.append(e)
    return out


def finished(evs: list[protocol.Event]) -> protocol.RunFinished:
    (end,) = [e for e in evs if e.kind == "run_finished"]
    return end


def test_a_finished_run_says_its_steps_time_ranks_and_both_ticks() -> None:
    evs = events()
    end = finished(evs)
    rec = record(evs)
    assert steps_done(rec) == end.steps_completed == 3
    assert status_text(rec) == (
        f"Run 1 finished: 3 step(s) in {end.elapsed_s:.3f} s on 4 rank(s). "
        "✓ ranks agree, ✓ average = full batch."
    )


@pytest.mark.parametrize("step", [0, 2])
def test_the_last_ranks_parameters_off_in_any_step_say_the_ranks_differ(step) -> None:
    line = status_text(record(nudged("params", step)))
    assert "✗ ranks differ" in line and "✓ ranks agree" not in line


def test_parameters_off_by_less_than_the_tolerance_still_agree() -> None:
    assert "✓ ranks agree" in status_text(record(nudged("params", 1, by=1e-8)))


@pytest.mark.parametrize("step", [0, 2])
def test_the_last_ranks_average_off_in_any_step_says_average_is_not_the_full_batch(step) -> None:
    line = status_text(record(nudged("averaged_grad", step)))
    assert line.endswith(", ✗ average ≠ full batch (see the stage for why).")


def test_a_run_with_no_reference_says_nothing_about_the_full_batch() -> None:
    line = status_text(record(events(drop="reference")))
    assert line.endswith("✓ ranks agree.") and "full batch" not in line


def test_a_run_with_no_complete_step_has_nothing_to_compare() -> None:
    evs = [e for e in load_recording(NAME) if e.kind in ("run_started", "run_finished")]
    rec = record(evs)
    assert steps_done(rec) == 0
    assert status_text(rec).endswith(
        "0 step(s) in " + f"{finished(evs).elapsed_s:.3f} s on 4 rank(s). "
        "no step to compare the ranks' parameters."
    )


def test_a_run_whose_time_is_not_known_says_none() -> None:
    rec = record(events())
    rec.elapsed_s = None
    assert status_text(rec).startswith("Run 1 finished: 3 step(s) on 4 rank(s). ✓")


def test_a_cancelled_run_counts_its_complete_steps_only() -> None:
    evs = load_recording(NAME)
    # cancelled with step 3 half reported: rank 3's parameters of step 3 never came
    cut = [e for e in evs if e.kind != "run_finished"]
    cut = [e for e in cut if not (e.kind == "params" and e.step == 2 and e.rank == 3)]
    rec = record([*cut, protocol.RunCancelled(run=1)])
    assert status_text(rec) == "Run 1 cancelled after 2 complete step(s)."
    assert playing_text(rec) == status_text(rec)  # said at once


def test_a_failed_run_says_its_reason() -> None:
    evs = [e for e in load_recording(NAME) if e.kind != "run_finished"]
    rec = record([*evs, protocol.RunFailed(run=1, reason="rank 2 raised", rank=2)])
    assert status_text(rec) == "Run 1 failed: rank 2 raised."
    assert playing_text(rec) == status_text(rec)


def test_a_finished_run_waits_for_the_stage_before_its_verdicts() -> None:
    rec = record(events())
    assert playing_text(rec) == (
        "Run 1 is over (4 rank(s)); the stage plays it, and what it found shows as the stage "
        "reaches it."
    )


def test_a_watched_run_says_its_verdicts_at_once() -> None:
    rec = record(load_recording("watched-2-ranks.jsonl"))
    assert rec.status is RunStatus.FINISHED
    assert playing_text(rec) == status_text(rec) and "✓ ranks agree" in playing_text(rec)
    steps = {e.step for e in load_recording("watched-2-ranks.jsonl") if e.kind == "params"}
    assert steps_done(rec) == len(steps) == 4
    assert status_text(rec).startswith("Run 1 finished: 4 step(s) in ")
    # its kind counts the steps and words the time: the launcher's start-up is said apart
    assert "s of training (" in status_text(rec) and "with the launcher's start-up" in (
        status_text(rec)
    )


@pytest.mark.parametrize(
    ("first", "want"),
    [(False, "{line} Upgraded from schema 1."), (True, "Upgraded from schema 1. {line}")],
)
def test_a_recordings_note_goes_after_the_line_or_before_it(first, want) -> None:
    rec = record(events())
    line = status_text(rec)
    rec.note, rec.note_first = "Upgraded from schema 1.", first
    assert status_text(rec) == want.format(line=line)


def test_a_kind_with_its_own_status_line_says_it() -> None:
    rec = record(load_recording("uneven-monitored-barrier.jsonl"))
    assert "named rank" in status_text(rec) and "finished:" not in status_text(rec)
