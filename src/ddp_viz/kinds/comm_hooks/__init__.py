"""Fewer bytes on the wire (``[comm_hooks]``): one model trained with DDP's default hook,
``fp16_compress_hook`` and ``powerSGD_hook`` side by side; what each sends, and what it costs
in accuracy."""

from __future__ import annotations

from ddp_viz.kinds.comm_hooks import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.comm_hooks.model import KIND, HooksRecord, HooksSpec, complete_steps
from ddp_viz.kinds.comm_hooks.report import hooks_report, status_line
from ddp_viz.model.registry import QuantitySource, RunKind, register
from ddp_viz.model.timeline import RunRecord


def _bytes(record: RunRecord, quantity: object) -> float | None:
    """Bytes one rank handed to all-reduce in one step of one variant (``param``)."""
    part = record.parts.get(KIND)
    if part is None:
        return None
    sent = part.sent(quantity.param, quantity.step - 1, quantity.rank)  # type: ignore[attr-defined]
    return None if sent is None else float(sent)


register(
    RunKind(
        id=KIND,
        table=KIND,
        spec=HooksSpec,
        part=HooksRecord,
        complete_steps=complete_steps,
        report=hooks_report,
        status=status_line,
        quantities={"hook_bytes": QuantitySource(_bytes, phase="step", needs_param=True)},
        field_names={
            "comm_hooks.steps": "Steps",
            "comm_hooks.ranks": "PowerSGD ranks",
            "comm_hooks.warmup": "Warm-up steps",
            "comm_hooks.error_feedback": "Error feedback",
            "comm_hooks.width": "Hidden width",
            "comm_hooks.lr": "Learning rate",
        },
        trains=False,
        plots=False,
    )
)
