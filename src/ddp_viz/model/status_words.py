"""The status bar's line about a run that ended (pure): its steps, its time, its verdicts,
or a kind's own line (a watched run's diagnosis)."""

from __future__ import annotations

from ddp_viz.model.timeline import RunRecord, RunStatus


def status_text(rec: RunRecord) -> str:
    """One line for the status bar about a run that ended (with its recording's note)."""
    text = _status_text(rec)
    if not rec.note:
        return text
    return f"{rec.note} {text}" if rec.note_first else f"{text} {rec.note}"


def steps_done(rec: RunRecord) -> int:
    """The complete steps the run made, as its kind counts them (a part that thinned the
    record's history still counts the steps it emptied)."""
    for kind in rec.kinds():
        if kind.steps_done is not None:
            return kind.steps_done(rec)
    return len(rec.complete_steps())


def _status_text(rec: RunRecord) -> str:
    done = steps_done(rec)
    for kind in rec.kinds():
        line = kind.status(rec) if kind.status is not None else None
        if line is not None:
            return line
    if rec.status is RunStatus.FINISHED:
        summary = rec.check_summary()
        agree = {True: "✓ ranks agree", False: "✗ ranks differ"}.get(
            summary["ranks_agree"], "no step to compare the ranks' parameters"
        )
        judged = summary["average_is_full_batch"]
        full = (
            ", ✓ average = full batch"
            if judged
            else ""
            if judged is None  # no step of the run had a reference to check against
            else ", ✗ average ≠ full batch (see the stage for why)"
        )
        elapsed = f" in {rec.elapsed_s:.3f} s" if rec.elapsed_s is not None else ""
        for kind in rec.kinds():
            if kind.elapsed is not None:  # a kind's own words (what its time includes)
                elapsed = kind.elapsed(rec)
        return (
            f"Run {rec.run} finished: {done} step(s){elapsed} on {rec.world_size} rank(s). "
            f"{agree}{full}."
        )
    if rec.status is RunStatus.CANCELLED:
        return f"Run {rec.run} cancelled after {done} complete step(s)."
    return f"Run {rec.run} failed: {rec.reason}"
