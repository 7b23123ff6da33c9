"""Plain-text rendering of a recorded run, for the headless CLI."""

from __future__ import annotations

from ddp_viz.model.protocol import Grads
from ddp_viz.model.timeline import PARAM_NAMES, RunRecord, StepRecord, scalar, uneven_note

TICK, CROSS = "✓", "✗"


def fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.6g}"


def pair(g: Grads | None) -> str:
    return "  ".join(f"{fmt(scalar(g, n)):>9}" for n in PARAM_NAMES) if g else f"{'—':>20}"


def rows_label(rows: list[int]) -> str:
    """1-based row numbers, as the lesson counts them: [0, 1] -> '1–2'."""
    if not rows:
        return "—"
    if rows == list(range(rows[0], rows[-1] + 1)) and len(rows) > 1:
        return f"{rows[0] + 1}–{rows[-1] + 1}"
    return ",".join(str(r + 1) for r in rows)


def mark(ok: bool | None) -> str:
    return "?" if ok is None else (TICK if ok else CROSS)


def step_table(rec: RunRecord, st: StepRecord) -> str:
    head = (
        f"{'rank':>4}  {'rows':<7} {'loss':>10}   {'local grad (w, b)':>20}   "
        f"{'averaged (w, b)':>20}   {'after step (w, b)':>20}"
    )
    lines = [f"step {st.step}", head, "-" * len(head)]
    for r in sorted(st.ranks):
        rs = st.ranks[r]
        rows = rec.shards[r] if r < len(rec.shards) else []
        lines.append(
            f"{r:>4}  {rows_label(rows):<7} {fmt(rs.loss):>10}   {pair(rs.local)}   "
            f"{pair(rs.averaged)}   {pair(rs.params)}"
        )
    ref = st.reference
    if ref is not None:
        lines.append(
            f"{'':>4}  {'all':<7} {fmt(ref.full_batch_loss):>10}   "
            f"{'full batch (reference)':>20}   {pair(ref.full_batch_grads)}"
        )
        if st.average_is_full_batch() is False:
            lines.append(
                f"{'':>4}  {'':<7} {'':>10}   {'shard average by hand':>20}   "
                f"{pair(ref.manual_average)}"
            )
    lines.append(
        f"checks: {mark(st.ranks_agree())} ranks agree   "
        f"{mark(st.average_is_full_batch())} average = full batch"
    )
    if ref is not None and st.average_is_full_batch() is False:
        note = uneven_note(ref.shard_sizes)
        if note:
            lines.append(f"  why: {note}")
    return "\n".join(lines)


def run_report(rec: RunRecord, max_steps: int = 20) -> str:
    sc = rec.scenario
    pids = ", ".join(str(rec.pids[r]) for r in sorted(rec.pids))
    out = [
        f"DDP run {rec.run}: {rec.world_size} rank(s) over gloo, lr {sc.get('lr')}, "
        f"{rec.steps_planned} step(s), rank pids {pids}",
        "",
    ]
    steps = rec.steps
    shown = steps if len(steps) <= max_steps else steps[: max_steps // 2] + steps[-max_steps // 2 :]
    for i, st in enumerate(shown):
        if len(steps) > max_steps and i == max_steps // 2:
            out += [f"… {len(steps) - max_steps} steps not shown (use --json for all) …", ""]
        out += [step_table(rec, st), ""]
    summary = rec.check_summary()
    if rec.status == "finished":
        out.append(
            f"finished {len(rec.complete_steps())} step(s) in {fmt(rec.elapsed_s)} s: "
            f"{mark(summary['ranks_agree'])} ranks agree at every step, "
            f"{mark(summary['average_is_full_batch'])} average = full batch at every step"
        )
    else:
        out.append(f"run {rec.status}: {rec.reason}")
    return "\n".join(out)
