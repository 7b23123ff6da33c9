"""Plain-text lines about a run with uneven inputs, and its status line (pure)."""

from __future__ import annotations

from ddp_viz.kinds.uneven.record import part
from ddp_viz.model.report import param_label, value
from ddp_viz.model.timeline import RunRecord, RunStatus, max_abs_diff


def report_lines(rec: RunRecord) -> list[str]:
    """Uneven inputs: who ran out of batches, Join's zeros, and a stall's end, as recorded."""
    out = []
    un = part(rec)
    for r, n in sorted(un.out_of_data.items()):
        out.append(f"rank {r} ran out of batches after {n} step(s)")
    for (s, r), shadow in sorted(un.shadows.items()):
        zeros = "  ".join(
            f"{param_label(rec, n)} {value(shadow.grads, n)}" for n in rec.param_names
        )
        avg = "  ".join(
            f"{param_label(rec, n)} {value(shadow.averaged, n)}" for n in rec.param_names
        )
        out.append(
            f"step {s + 1}: under Join rank {r} all-reduced {zeros}; the average came back {avg}"
        )
    if un.one_process is not None and un.final_params:
        solo = "  ".join(
            f"{param_label(rec, n)} {value(un.one_process, n)}" for n in rec.param_names
        )
        diff = max_abs_diff(un.final_params[min(un.final_params)], un.one_process)
        out.append(f"one process, float64, the same rows: {solo} (largest difference {diff:.2g})")
    for r, stall in sorted(un.stalled.items()):
        out.append(
            f"rank {r} waited {stall.waited_s:.2f} s in {stall.what}, then gloo said: {stall.error}"
        )
    return [*out, ""] if out else []


def report_end(rec: RunRecord) -> str | None:
    """The report's last line when the process group's timeout ended a stall."""
    if rec.status != RunStatus.FINISHED or not part(rec).stalled:
        return None
    return (
        f"stalled after {len(rec.complete_steps())} step(s): the process group's timeout "
        "ended the wait (gloo's words above)"
    )


def status_line(rec: RunRecord) -> str | None:
    """The status bar's line when the timeout ended a stall (the core's line otherwise)."""
    stalled = part(rec).stalled
    if rec.status != RunStatus.FINISHED or not stalled:
        return None
    waits = ", ".join(f"rank {r} in {st.what}" for r, st in sorted(stalled.items()))
    return (
        f"Run {rec.run} stalled after {len(rec.complete_steps())} step(s): {waits}, until the "
        "process group's timeout ended it (gloo's error is on the stage)."
    )
