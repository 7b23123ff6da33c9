"""Plain-text lines about a run with uneven inputs, and its status line (pure)."""

from __future__ import annotations

from ddp_viz.kinds.uneven.events import Stalled
from ddp_viz.kinds.uneven.record import (
    KIND,
    ONE_PROCESS_TOL,
    UnevenRecord,
    ended_by,
    found,
    missing_text,
    part,
)
from ddp_viz.kinds.uneven.spec import UnevenSpec
from ddp_viz.model.report import param_label, value
from ddp_viz.model.timeline import AGREE_TOL, RunRecord, RunStatus, grads_close, max_abs_diff


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
    out += final_lines(rec, un)
    out += hang_check_lines(un)
    for r, stall in sorted(un.stalled.items()):
        out.append(f"rank {r} waited {stall.waited_s:.2f} s in {stall.what}, {raised(stall)}")
    return [*out, ""] if out else []


def final_lines(rec: RunRecord, un: UnevenRecord) -> list[str]:
    """After the loop: the ranks' parameters alike (Join's promise), and one process's on the
    same rows, each with its verdict as the stage gives it (a difference alone reads as a
    pass whatever its size)."""
    out = []
    final = un.final_params
    if len(final) == rec.world_size and final:
        first = final[min(final)]
        same = all(grads_close(first, p, AGREE_TOL) for p in final.values())
        out.append(
            "after the loop: ✓ the same parameters on every rank"
            if same
            else "after the loop: ✗ the ranks' parameters differ"
        )
    if un.one_process is not None and final:
        solo = "  ".join(
            f"{param_label(rec, n)} {value(un.one_process, n)}" for n in rec.param_names
        )
        diff = max_abs_diff(final[min(final)], un.one_process)
        mark = "✓" if diff <= ONE_PROCESS_TOL else "✗"
        out.append(
            f"one process, float64, the same rows: {solo} "
            f"({mark} largest difference {diff:.2g}, tolerance {ONE_PROCESS_TOL:g})"
        )
    return out


def hang_check_lines(un: UnevenRecord) -> list[str]:
    """How each rank's group looked for a hang, when the run asked for a tool."""
    out = []
    for r, check in sorted(un.hang_checks.items()):
        if check.debug == "detail":
            out.append(
                f"rank {r}: the hook's all-reduces and the barrier ran on a group made with "
                f"TORCH_DISTRIBUTED_DEBUG={check.level}, its backend a {check.backend}"
            )
        elif check.debug == "monitored_barrier":
            out.append(f"rank {r}: the script's barrier is dist.monitored_barrier")
    return out


def raised(stall: Stalled) -> str:
    """What ended the wait, and its words."""
    how = ended_by(stall)
    if how == "mismatch":
        return f"then DETAIL's check raised: {stall.error}"
    if how == "monitored_barrier":
        return f"then monitored_barrier named {missing_text(stall)}: {stall.error}"
    return f"then gloo said: {stall.error}"


def found_line(rec: RunRecord) -> str | None:
    """Which tool found the hang, and how fast, against the timeout it did not wait for."""
    stall = found(part(rec))
    if stall is None:
        return None
    # the part exists only when the scenario holds the table; a recording made before the
    # field was written ran with its default
    timeout = float(rec.scenario[KIND].get("timeout_s", UnevenSpec.timeout_s))
    if ended_by(stall) == "mismatch":
        tool = "TORCH_DISTRIBUTED_DEBUG=DETAIL reported the mismatch"
    else:
        tool = f"monitored_barrier named {missing_text(stall)}"
    return f"{tool} after {stall.waited_s:.3f} s (the process group's timeout: {timeout:g} s)"


def report_end(rec: RunRecord) -> str | None:
    """The report's last line when the process group's timeout ended a stall."""
    if rec.status != RunStatus.FINISHED or not part(rec).stalled:
        return None
    tool = found_line(rec)
    if tool is not None:
        return f"stalled after {len(rec.complete_steps())} step(s): {tool}"
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
    tool = found_line(rec)
    if tool is not None:
        return f"Run {rec.run} stalled after {len(rec.complete_steps())} step(s): {waits}; {tool}."
    return (
        f"Run {rec.run} stalled after {len(rec.complete_steps())} step(s): {waits}, until the "
        "process group's timeout ended it (gloo's error is on the stage)."
    )
