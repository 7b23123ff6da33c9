"""The status bar's line about a run that ended (pure): its verdicts once the stage has shown
the run, and what it may say before."""

from __future__ import annotations

from ddp_viz.model.timeline import RunRecord, RunStatus


def playing_text(rec: RunRecord) -> str:
    """The status bar when a run ends before the stage has shown it: a finished run's line
    holds its verdicts and numbers (a check's ✗, the steps done, the rank a tool named) that
    a prediction may ask for, so it waits for the stage to reach the end (see
    :meth:`SessionController.on_stage_position`). A run that failed or was cancelled says
    so at once: that is no answer to a question, and the learner must know. So does a run
    whose views follow its newest step (a watched run): its stage is at the end already."""
    if rec.status is not RunStatus.FINISHED or any(k.follow_latest for k in rec.kinds()):
        return status_text(rec)
    return (
        f"Run {rec.run} is over ({rec.world_size} rank(s)); the stage plays it, and what it "
        "found shows as the stage reaches it."
    )


def status_text(rec: RunRecord) -> str:
    """One line for the status bar about a run that ended (with its recording's note)."""
    text = sentence(_status_text(rec))
    if not rec.note:
        return text
    return f"{rec.note} {text}" if rec.note_first else f"{text} {rec.note}"


def sentence(text: str) -> str:
    """``text`` ending as a sentence: another may follow it on the line (a recording's note,
    the watched command's exit status). A failure's reason ("… too large for this data)")
    and a watched verdict ("… before step 41's forward") ran straight into the next one."""
    return text if text.endswith((".", "!", "?")) else f"{text}."


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
