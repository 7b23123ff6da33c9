"""The plain DDP report's small parts and its edges, each value written here by hand (pure):
the marks, the labels, where a long run's steps are cut, and how a run that did not finish
ends its report."""

from __future__ import annotations

from ddp_viz.model.report import fmt, mark, rows_label, run_outcome, run_report, shard_label
from ddp_viz.model.timeline import RunStatus, record
from tests.conftest import load_recording


def test_marks_and_labels_say_what_they_stand_for() -> None:
    assert (mark(True), mark(False), mark(None)) == ("✓", "✗", "?")
    assert (fmt(None), fmt(-27.5), fmt(1 / 3)) == ("—", "-27.5", "0.333333")
    assert rows_label([]) == "—"
    assert (rows_label([0, 1, 2]), rows_label([4]), rows_label([0, 2])) == ("1–3", "5", "1,3")
    assert (shard_label([3]), shard_label([0, 1])) == ("row 4", "rows 1–2")


def step_headers(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("step ")]


def test_a_run_as_long_as_the_limit_is_shown_whole_and_one_step_more_is_cut_in_the_middle() -> None:
    rec = record(load_recording("long-run-32-steps.jsonl"))
    assert len(rec.steps) == 32
    whole = run_report(rec, max_steps=32)
    assert "not shown" not in whole and len(step_headers(whole)) == 32
    cut = run_report(rec, max_steps=31)  # 15 first, the note, 16 last
    lines = cut.splitlines()
    note = lines.index("… 1 steps not shown (use --json for all) …")
    before = [line for line in lines[:note] if line.startswith("step ")]
    after = [line for line in lines[note:] if line.startswith("step ")]
    assert (len(before), len(after)) == (15, 16)
    assert before[-1].startswith("step 15") and after[0].startswith("step 17"), (before, after)


def test_a_run_that_did_not_finish_ends_on_its_status_and_reason() -> None:
    rec = record(load_recording("diverging-lr10.jsonl"))
    assert rec.status is not RunStatus.FINISHED
    assert run_outcome(rec) == ["", f"run {rec.status}: {rec.reason}"]
    assert run_report(rec).splitlines()[-1] == f"run {rec.status}: {rec.reason}"


def test_a_finished_run_without_a_time_says_zero_seconds() -> None:
    rec = record(load_recording("default-run.jsonl"))
    assert run_outcome(rec) == ["", f"finished in {rec.elapsed_s:.3f} s"]
    rec.elapsed_s = None
    assert run_outcome(rec) == ["", "finished in 0.000 s"]
