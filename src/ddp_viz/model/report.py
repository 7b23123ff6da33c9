"""Plain-text rendering of a recorded run, for the headless CLI.

Steps and rows are numbered from 1, as every view shows them (the event stream counts from 0).
One line per rank and parameter; a tensor of more than one value shows its L2 norm, ‖name‖.
"""

from __future__ import annotations

from ddp_viz.model.launchspec import launch_line
from ddp_viz.model.protocol import Grads
from ddp_viz.model.reference import values_policy
from ddp_viz.model.sharing import unequal_shards_note, why_average_differs
from ddp_viz.model.timeline import RunRecord, RunStatus, StepRecord, display_value

TICK, CROSS = "✓", "✗"


def fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.6g}"


def shard_label(rows: list[int]) -> str:
    """ "row 3" or "rows 1–2": a rank's shard, counted from 1."""
    return f"{'row' if len(rows) == 1 else 'rows'} {rows_label(rows)}"


def rows_label(rows: list[int]) -> str:
    """1-based row numbers, as the lesson counts them: [0, 1] -> '1–2'."""
    if not rows:
        return "—"
    if rows == list(range(rows[0], rows[-1] + 1)) and len(rows) > 1:
        return f"{rows[0] + 1}–{rows[-1] + 1}"
    return ",".join(str(r + 1) for r in rows)


def mark(ok: bool | None) -> str:
    return "?" if ok is None else (TICK if ok else CROSS)


def full_batch_check(ok: bool | None) -> str:
    """The check in words that hold whichever way it went ("✗ average = full batch" read as a
    claim that they are equal)."""
    if ok is None:
        return "? average against the full batch: no reference at this step"
    return f"{TICK} average = full batch" if ok else f"{CROSS} average ≠ full batch"


# a whole run's check, by check_summary()'s verdict (None: no step had a reference)
RUN_FULL_BATCH = {
    True: f"{TICK} average = full batch at every step checked against the reference",
    False: f"{CROSS} average ≠ full batch at a step checked against the reference",
    None: "no step had a reference to check the average against",
}


def param_label(rec: RunRecord, name: str) -> str:
    """``weight`` for one value, ``‖0.weight‖`` for a tensor shown by its norm."""
    info = next((p for p in rec.params if p.name == name), None)
    return name if info is None or info.numel == 1 else f"‖{name}‖"


def value(g: Grads | None, name: str) -> str:
    """A named tensor as the table shows it; "—" when the rank sent none (no gradient)."""
    return fmt(display_value(g[name])) if g and g.get(name) is not None else "—"


def _rows_of(rec: RunRecord, r: int, rows: list[int]) -> list[int]:
    return rows or (rec.shards[r] if r < len(rec.shards) else [])


def rank_lines(rec: RunRecord, st: StepRecord, rank: int, indent: int) -> list[str]:
    """What the record's kinds say under a rank's rows in a step's table, indented."""
    return [
        f"{'':>{indent}}{line}"
        for kind in rec.kinds()
        if kind.rank_lines is not None
        for line in kind.rank_lines(rec, st, rank)
    ]


def light_step_table(rec: RunRecord, st: StepRecord) -> str:
    """A long run's step whose tensor values were not recorded: its rows and losses."""
    rw = max([7] + [len(rows_label(_rows_of(rec, r, rs.rows))) for r, rs in st.ranks.items()])
    head = f"{'rank':>4}  {'rows':<{rw}} {'loss':>10}"
    lines = [f"step {st.step + 1}", head, "-" * len(head)]
    for r in sorted(st.ranks):
        rs = st.ranks[r]
        lines.append(f"{r:>4}  {rows_label(_rows_of(rec, r, rs.rows)):<{rw}} {fmt(rs.loss):>10}")
    lines.append(values_policy())
    return "\n".join(lines)


def step_table(rec: RunRecord, st: StepRecord) -> str:
    if not st.has_values:
        return light_step_table(rec, st)
    names = rec.param_names
    width = max([len(param_label(rec, n)) for n in names] + [9])
    rw = max([7] + [len(rows_label(_rows_of(rec, r, rs.rows))) for r, rs in st.ranks.items()])
    k = int(rec.scenario.get("train", {}).get("accumulate", 1))
    # with accumulation the bucket holds .grad, a running sum (after a synced micro-batch, a
    # sum of averages): the micro-batch lines below say what each backward left instead
    local = "" if k > 1 else "local grad"
    lw = max(11, len(local))
    head = (
        f"{'rank':>4}  {'rows':<{rw}} {'loss':>10}   {'parameter':<{width}}  "
        f"{local:>{lw}}  {'averaged':>11}  {'after step':>11}"
    )
    lines = [f"step {st.step + 1}", head, "-" * len(head)]
    lead_w = 4 + 2 + rw + 1 + 10
    for r in sorted(st.ranks):
        rs = st.ranks[r]
        rows = _rows_of(rec, r, rs.rows)
        for i, n in enumerate(names):
            lead = f"{r:>4}  {rows_label(rows):<{rw}} {fmt(rs.loss):>10}" if i == 0 else ""
            lines.append(
                f"{lead:<{lead_w}}   {param_label(rec, n):<{width}}  "
                f"{value(rs.local, n) if local else '':>{lw}}  "
                f"{value(rs.averaged, n):>11}  {value(rs.params, n):>11}"
            )
        lines += rank_lines(rec, st, r, 6)
    ref = st.reference
    if ref is not None:
        for label, grads in (
            ("full batch (reference)", ref.full_batch_grads),
            ("shard average by hand", ref.manual_average),
        ):
            if label.startswith("shard") and st.average_is_full_batch() is not False:
                continue
            loss = fmt(ref.full_batch_loss) if label.startswith("full") else ""
            lines.append(f"{'':>4}  {'all' if loss else '':<{rw}} {loss:>10}   {label}:")
            for n in names:
                lines.append(
                    f"{'':>{lead_w}}   {param_label(rec, n):<{width}}  {'':>{lw}}  "
                    f"{value(grads, n):>11}"
                )
        if ref.one_process_params:  # gradient accumulation: a whole single-process run
            lines.append(f"{'':>4}  {'':<{rw}} {'':>10}   one process, one batch a step:")
            for n in names:
                lines.append(
                    f"{'':>{lead_w}}   {param_label(rec, n):<{width}}  {'':>{lw}}  {'':>11}  "
                    f"{value(ref.one_process_params, n):>11}"
                )
    lines.append(
        f"checks: {mark(st.ranks_agree())} ranks agree   "
        f"{full_batch_check(st.average_is_full_batch())}"
    )
    if ref is not None and st.average_is_full_batch() is False:
        note = unequal_shards_note(ref.shard_sizes) or why_average_differs(rec, st)
        if note:
            lines.append(f"  why: {note}")
    return "\n".join(lines)


def rank_pids(rec: RunRecord) -> str:
    """The ranks' process ids in rank order, as every report's first line gives them."""
    return ", ".join(str(rec.pids[r]) for r in sorted(rec.pids))


def run_outcome(rec: RunRecord) -> list[str]:
    """A report's last lines: how long a finished run took, or how it ended otherwise."""
    if rec.status is RunStatus.FINISHED:
        return ["", f"finished in {rec.elapsed_s or 0:.3f} s"]
    return ["", f"run {rec.status}: {rec.reason}"]


def run_report(rec: RunRecord, max_steps: int = 20) -> str:
    for kind in rec.kinds():
        if kind.report is not None:  # a kind of run that is not DDP training reports itself
            return kind.report(rec)
    sc = rec.scenario
    pids = rank_pids(rec)
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
    if launched := launch_line(rec):
        out += [launched, ""]
    for kind in rec.kinds():
        if kind.report_lines is not None:
            out += kind.report_lines(rec)
    summary = rec.check_summary()
    # how a kind of run says it ended (a stall the timeout ended), if it says so
    end = next((e for k in rec.kinds() if k.report_end and (e := k.report_end(rec))), None)
    if end is not None:
        out.append(end)
    elif rec.status is RunStatus.FINISHED:
        done = rec.complete_steps()
        where = "every step" if all(s.has_values for s in done) else "every step with values"
        out.append(
            f"finished {len(done)} step(s) in {fmt(rec.elapsed_s)} s: "
            f"{mark(summary['ranks_agree'])} ranks agree at {where}, "
            + RUN_FULL_BATCH[summary["average_is_full_batch"]]
        )
    else:
        out.append(f"run {rec.status}: {rec.reason}")
    return "\n".join(out)
