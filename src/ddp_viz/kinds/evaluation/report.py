"""Plain-text report of an evaluation run (``[evaluation]``) for the headless CLI, and the
status bar's line."""

from __future__ import annotations

from ddp_viz.kinds.evaluation.record import (
    EvalRecord,
    extra_rows,
    kept_sizes,
    mask_agreement,
    module_done,
    part,
    ranks_agree,
    reference_accuracy,
    repeated,
    spec_of,
    stalled,
    ways,
)
from ddp_viz.model.report import rank_pids, run_outcome
from ddp_viz.model.timeline import RunRecord, RunStatus


def repeated_words(p: EvalRecord) -> str:
    """``row 0 (ranks 0 and 3), row 1 (ranks 1 and 3)``; "none" when no row repeats."""
    rows = repeated(p)
    if not rows:
        return "none"
    return ", ".join(f"row {i} (ranks {' and '.join(map(str, rs))})" for i, rs in rows.items())


def accuracy_lines(p: EvalRecord, world: int) -> list[str]:
    ref = reference_accuracy(p)
    if ref is None or not ways(p):
        return ["the evaluation did not finish"]
    rows = p.reference.rows if p.reference else 0
    out = [
        f"held-out rows: {rows} on {world} ranks; DistributedSampler hands out "
        f"{rows + extra_rows(p)}: {extra_rows(p)} place(s) repeat a row",
        f"rows counted twice: {repeated_words(p)}",
        f"rows a rank keeps without the padding: {', '.join(map(str, kept_sizes(p)))}",
        "",
        f"{'way':<36} {'accuracy':>9}",
    ]
    for w in ways(p):
        mark = "= reference" if w.equal else "≠ reference"
        out.append(f"{w.label:<36} {w.value:>9.4f}  {mark}")
    out.append(f"{'reference: one process, float64':<36} {ref:>9.4f}")
    agree = "✓" if ranks_agree(p) else "✗"
    out.append(f"{agree} every rank got the same all-reduced numbers")
    return out


def seed_lines(p: EvalRecord) -> list[str]:
    out = []
    for seeding, words in (("same", "manual_seed(seed)"), ("seed_plus_rank", "seed + rank")):
        agree = mask_agreement(p, seeding)
        if agree:
            shown = ", ".join(f"rank {r} {a:.0%}" for r, a in agree.items() if r)
            out.append(f"dropout masks of step 1 equal to rank 0's, {words}: {shown}")
    crcs = {m.weights for m in p.masks.values() if m.seeding == "seed_plus_rank"}
    if crcs:
        out.append(f"weights after step 1, seed + rank: {len(crcs)} distinct CRC-32 across ranks")
    return out


def hang_lines(p: EvalRecord, world: int, timeout: float) -> list[str]:
    out = []
    for rank, o in sorted(stalled(p).items()):
        wait = p.waits.get(("wrapper", rank))
        where = wait.where[0] if wait and wait.where else o.what
        out.append(f"rank {rank} waited {o.seconds:.2f} s in {where}; gloo said: {o.error}")
    if out:
        out.insert(0, f"rank 0 alone through the wrapper (timeout {timeout:g} s):")
    if module_done(p, world):
        acc = p.outcomes[("module", 0)].accuracy
        out.append(f"rank 0 alone through model.module: completed, accuracy {acc:.4f}")
    return out


def evaluation_report(rec: RunRecord) -> str:
    p = part(rec)
    spec = spec_of(rec)
    pids = rank_pids(rec)
    out = [
        f"evaluation run {rec.run}: {rec.world_size} ranks over gloo, rank pids {pids}",
        f"model: Linear(4, {spec.hidden}) → BatchNorm1d → tanh → Dropout({spec.dropout:g}) → "
        f"Linear({spec.hidden}, 3); {spec.train_steps} DDP step(s) of {spec.batch} rows a rank",
        "",
        *accuracy_lines(p, rec.world_size),
        "",
        *seed_lines(p),
        "",
        *hang_lines(p, rec.world_size, spec.timeout_s),
    ]
    out += run_outcome(rec)
    return "\n".join(out)


def status_line(rec: RunRecord) -> str | None:
    if rec.status != RunStatus.FINISHED:
        return None
    p = part(rec)
    right = [w for w in ways(p) if w.equal]
    if not ways(p):
        return None
    # every rank that waited until the timeout ended it (rank 0 in DDP's forward, the others
    # at their barrier): not "rank 0 waited 4 rank(s) out"
    n = len(stalled(p))
    hung = (
        f"; rank 0 evaluating alone through DDP hung until the timeout "
        f"({n} of {rec.world_size} ranks waited)"
        if n
        else ""
    )
    return (
        f"Run {rec.run} finished: {len(right)} of 4 ways equal the one-process accuracy "
        f"({extra_rows(p)} row(s) counted twice){hung}."
    )
