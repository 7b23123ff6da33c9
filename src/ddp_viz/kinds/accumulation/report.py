"""The text report's lines for gradient accumulation (pure): under each rank's rows in a step's
table, its micro-batches."""

from __future__ import annotations

from ddp_viz.kinds.accumulation.record import micro_of
from ddp_viz.model.report import fmt, param_label, rows_label, value
from ddp_viz.model.timeline import RunRecord, StepRecord


def micro_lines(rec: RunRecord, st: StepRecord, rank: int) -> list[str]:
    """A rank's micro-batches: rows, loss, ``.grad`` after each backward, and whether DDP's
    comm hook all-reduced in it."""
    out = []
    for m in micro_of(rec, st.step, rank):
        grads = "  ".join(f"{param_label(rec, n)} {value(m.grads, n)}" for n in rec.param_names)
        n = len(m.allreduced)
        synced = ("all-reduced" + (f" ({n} buckets)" if n > 1 else "")) if n else "no all-reduce"
        out.append(
            f"micro-batch {m.micro + 1}: rows {rows_label(m.rows)}, loss {fmt(m.loss)}, "
            f".grad after backward: {grads}; {synced}"
        )
    return out
