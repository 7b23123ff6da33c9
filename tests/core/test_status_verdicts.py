"""The status bar keeps a finished run's verdicts and numbers until the stage has shown the run
to its end: a run ends long before its animation does, and the line says what a prediction
may ask for (the session controller with a fake view and recorded runs; no Qt, no torch)."""

from __future__ import annotations

import pytest

from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.timeline import walk
from tests.conftest import load_recording
from tests.core.test_session import make, play, ready

# recording -> what its finished line says once the stage has shown it (✓ and ✗ both)
CASES = [
    ("uneven-3-ranks.jsonl", "✗ average ≠ full batch"),  # ddp-pattern at 3 ranks
    ("four-ranks-3-steps.jsonl", "✓ average = full batch"),
    ("uneven-monitored-barrier.jsonl", "named rank"),  # uneven-inputs: the rank it found
    ("not-averaged-unused.jsonl", "stopped after 1 step(s)"),  # the steps DDP allowed
]


@pytest.mark.parametrize(("name", "verdict"), CASES)
def test_no_verdict_in_the_status_bar_before_the_stage_shows_it(name, verdict) -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    play(s, name)
    statuses = [a[0] for a in v.called("show_status")]
    assert not any(verdict in line for line in statuses), statuses
    assert not any("✓" in line or "✗" in line for line in statuses), statuses
    cursors = list(walk(s.record.complete_prefix()))
    for cursor in cursors[:-1]:  # the stage plays: still nothing
        for progress in (0.0, 0.5, 1.0):
            s.on_stage_position(cursor, progress)
    s.on_stage_position(cursors[-1], 0.5)
    assert verdict not in v.status and "the stage plays it" in v.status
    s.on_stage_position(cursors[-1], 1.0)  # the end: the line with its verdict
    assert verdict in v.status, v.status
    assert len(v.called("show_run_shown")) == 1


def test_a_failed_run_says_why_at_once() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    play(s, "diverging-lr10.jsonl")
    assert "failed" in v.status and "diverged" in v.status


def test_a_second_recording_with_the_same_run_id_gets_its_verdicts_too() -> None:
    """Recordings all number their run 1: opening a second one after the first had been
    shown must still end with its own line, not the playing one."""
    s, _, v = make()
    for name, verdict in [
        ("four-ranks-3-steps.jsonl", "✓ average = full batch"),
        ("uneven-3-ranks.jsonl", "✗ average ≠ full batch"),
    ]:
        s.replay(load_recording(name))
        assert "the stage plays it" in v.status
        for cursor in walk(s.record.complete_prefix()):
            s.on_stage_position(cursor, 1.0)
        assert verdict in v.status, (name, v.status)


def test_a_failed_run_s_line_ends_its_sentence_before_the_recording_s_note() -> None:
    """Under X: "… (learning rate 10 is too large for this data) Recorded before versioned
    recordings …": the failure's reason ran into the note the recording adds."""
    import json

    from ddp_viz.model.run_status import status_text
    from ddp_viz.model.timeline import record
    from tests.conftest import DATA

    events = load_recording("diverging-lr10.jsonl")
    reason = next(
        json.loads(line)["reason"]
        for line in (DATA / "diverging-lr10.jsonl").read_text().splitlines()
        if '"run_failed"' in line
    )
    assert not reason.endswith(".")  # the case: a reason that is no sentence of its own
    rec = record(events)
    rec.note = "Recorded before versioned recordings (schema 0): upgraded to schema 6."
    assert status_text(rec) == f"Run 1 failed: {reason}. {rec.note}"
    rec.note_first = True
    assert status_text(rec) == f"{rec.note} Run 1 failed: {reason}."
