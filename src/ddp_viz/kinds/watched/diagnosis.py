"""The doctor's diagnosis on every surface (pure): the Processes table's state of each rank
and the status bar's line say what the page's headline and the terminal's verdict say.

A crashed rank is "failed", the ranks that then failed or were stopped "stopped", a rank killed
by a signal "killed (SIGKILL)"; when no rank raised an error of its own, none is "failed" but
a rank that came to the all-reduce past the others' timeout (:mod:`.secondhand`). While a
hang holds (no step came after it), the ranks in it are "hung" (inside a collective) or
"stuck" (in none). The status bar's line is the verdict.
"""

from __future__ import annotations

from ddp_viz.kinds.watched import attempts, secondhand, stalls
from ddp_viz.kinds.watched import failures as fail
from ddp_viz.kinds.watched.attempts import findings, verdict
from ddp_viz.kinds.watched.checks import doctoring, rank_ends, uneven
from ddp_viz.model.timeline import RunRecord

PREFIX = "ddp-viz verdict: "


def rank_states(rec: RunRecord) -> dict[int, str]:
    """Each rank the doctor knows more of than "training" or "done"."""
    out: dict[int, str] = {}
    # the processes running now, or last; a hang they got past holds no rank
    rec = stalls.settled(attempts.last(rec))[0]
    d = doctoring(rec)
    if d.hangs and not d.resumed:
        for s in d.hangs[-1].ranks:
            if s["state"] == "inside":
                out[s["rank"]] = "hung"
            elif s["state"] == "outside":
                out[s["rank"]] = "stuck"
    ends = rank_ends(rec)
    first = fail.cause(ends)
    cause = first.rank if first is not None else None
    if first is not None and first.secondhand:
        came = secondhand.came_late(rec, ends)
        cause = came[0] if came is not None else None
    late = uneven(rec) is not None
    for r in ends:
        if r.end in (fail.End.KILLED, fail.End.STOPPED) and r.signal:
            out[r.rank] = f"killed ({r.signal})"
        elif first is not None and not late and (r.rank == cause or first.everyone):
            out[r.rank] = "failed"  # every rank, when each raised the script's one error
        else:
            out[r.rank] = "stopped"
    return out


def status_line(rec: RunRecord) -> str | None:
    """The status bar's line once the doctor found something: the verdict (None: nothing
    found, the core's own line stands)."""
    if not findings(rec):
        return None
    said = verdict(rec).removeprefix(PREFIX)
    mark = "" if said.startswith(("✗", "✓")) else "✗ "
    return f"Run {rec.run}: {mark}{said}"


def finished_status(rec: RunRecord) -> str | None:
    """The status bar's line for a finished run the doctor found something in: the run's
    steps and time, then the verdict in place of the core's "✓ ranks agree" (which a run
    whose rank crashed must not read as)."""
    line = status_line(rec)
    if line is None:
        return None
    from ddp_viz.kinds.watched.history import complete_count
    from ddp_viz.kinds.watched.steps import watched_elapsed

    said = line.removeprefix(f"Run {rec.run}: ")
    # "ended", not "finished": the command is over, but a run the doctor found something in
    # (a crash, a hang) did not finish its training
    return (
        f"Run {rec.run} ended: {complete_count(rec)} step(s){watched_elapsed(rec)} on "
        f"{rec.world_size} rank(s). {said}"
    )
