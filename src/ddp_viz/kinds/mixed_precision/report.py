"""Plain-text report of a mixed-precision run (``[mixed_precision]``), for the headless CLI, and
the status bar's line."""

from __future__ import annotations

from ddp_viz.kinds.mixed_precision.model import (
    ARMS,
    AUTOCAST_ARMS,
    KIND,
    SCALER_ARM,
    SHARDED_ARMS,
    WIRE_ARMS,
    PrecisionRecord,
    arm,
    complete_steps,
    spec_of,
)
from ddp_viz.model.report import rank_pids, run_outcome
from ddp_viz.model.timeline import RunRecord, RunStatus

DTYPE_KEYS = ("activation", "param", "grad", "bucket", "wire", "loss")


def skip_line(part: PrecisionRecord, steps: int, world: int) -> str:
    """The scaler's verdict over the run: every skipped step skipped by every rank."""
    skipped = [s for s in range(steps) if part.skipped(s, world).skipped]
    split = [s for s in range(steps) if not part.skipped(s, world).together]
    if split:
        s = split[0]
        v = part.skipped(s, world)
        return (
            f"✗ step {s + 1}: ranks {v.skipped} skipped and ranks {v.stepped} stepped: "
            "the replicas now differ"
        )
    if not skipped:
        return f"✓ over {steps} step{'' if steps == 1 else 's'}: no rank skipped a step"
    words = ", ".join(str(s + 1) for s in skipped)
    return f"✓ step {words} skipped on every one of the {world} ranks together"


def dtype_rows(part: PrecisionRecord, step: int) -> list[tuple[str, dict[str, str]]]:
    rows = []
    for arm_id in AUTOCAST_ARMS + WIRE_ARMS[1:]:
        e = part.at(arm_id, step).get(0)
        rows.append((arm(arm_id).label, dict(e.dtypes) if e else {}))
    return rows


def fsdp_lines(part: PrecisionRecord, n: int) -> list[str]:
    """FSDP2 with and without bfloat16 parameters: rank 0's bytes in the last step."""
    rows = [(a, part.fsdp_at(a.id, n - 1).get(0)) for a in SHARDED_ARMS] if n else []
    if not any(e for _, e in rows):
        return []
    out = ["", "FSDP2 (fully_shard), rank 0, last step:"]
    out.append(f"{'arm':<24}{'gathered':>10}{'reduced':>9}{'gather':>10}{'reduce':>10}")
    for a, e in rows:
        if e is not None:
            gather, reduce = e.dtypes.get("gather", "-"), e.dtypes.get("reduce", "-")
            out.append(f"{a.label:<24}{e.gathered:>10,}{e.reduced:>9,}{gather:>10}{reduce:>10}")
    return out


def precision_report(rec: RunRecord) -> str:
    part: PrecisionRecord = rec.parts[KIND]
    spec = spec_of(rec)
    n = complete_steps(rec)
    world = rec.world_size
    out = [
        f"mixed precision run {rec.run}: {world} ranks over gloo, rank pids {rank_pids(rec)}",
        f"model: Linear(8, {spec.width}) → tanh → Linear({spec.width}, {spec.width}) → tanh → "
        f"Linear({spec.width}, 1); {spec.batch} rows a rank a step, SGD lr {spec.lr:g}",
        "",
        "dtypes rank 0 saw in step 1:",
        f"{'arm':<24}" + "".join(f"{k:>11}" for k in DTYPE_KEYS),
    ]
    for label, dtypes in dtype_rows(part, 0) if n else []:
        out.append(f"{label:<24}" + "".join(f"{dtypes.get(k, '-'):>11}" for k in DTYPE_KEYS))
    out += ["", "loss (mean of the ranks) and largest |p − p_float32| on rank 0, by step:"]
    head = f"{'step':>4} " + "".join(f"{arm(a).label:>26}" for a in AUTOCAST_ARMS)
    out.append(head)
    for s in range(n):
        cells = []
        for a in AUTOCAST_ARMS:
            e = part.at(a, s)[0]
            cells.append(f"{part.loss(a, s):>14.6g} {e.param_diff:>11.2e}")
        out.append(f"{s + 1:>4} " + "".join(cells))
    out += [
        "",
        f"GradScaler (autocast fp16), scale and inf by rank; spike at step {spec.spike_step}:",
    ]
    for s in range(n):
        ranks = part.at(SCALER_ARM, s)
        e = ranks[0]
        flags = " ".join(
            f"r{r}:{'inf' if ranks[r].local_inf else 'ok'}/{'step' if ranks[r].stepped else 'skip'}"
            for r in sorted(ranks)
        )
        out.append(f"{s + 1:>4} scale {e.scale:>9g} → {e.next_scale:<9g} local/step {flags}")
    out.append(skip_line(part, n, world))
    out += ["", "on the wire, rank 0, last step:"]
    out.append(f"{'arm':<24}{'bytes':>8}{'rel. error':>12}{'underflow':>11}")
    for a in WIRE_ARMS:
        e = part.at(a, n - 1).get(0) if n else None
        if e is not None:
            label = arm(a).label if a != "fp32" else "float32 on the wire"
            out.append(f"{label:<24}{e.sent:>8,}{e.error:>12.2e}{e.underflow:>11}")
    out += fsdp_lines(part, n)
    if part.refused is not None:
        said = part.refused.message.splitlines()[0] if part.refused.message else "accepted"
        out += ["", f"register_comm_hook(bf16_compress_hook) by its own name: {said}"]
    out += run_outcome(rec)
    return "\n".join(out)


def status_line(rec: RunRecord) -> str | None:
    if rec.status != RunStatus.FINISHED:
        return None
    part: PrecisionRecord = rec.parts[KIND]
    n = complete_steps(rec)
    if not n:
        return None
    ways = len(ARMS) + (len(SHARDED_ARMS) if spec_of(rec).fsdp else 0)
    return f"Run {rec.run} finished: {ways} ways on {rec.world_size} ranks; " + skip_line(
        part, n, rec.world_size
    )
