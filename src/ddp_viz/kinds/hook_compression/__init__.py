"""Fewer bytes on the wire (``[hook_compression]``): one model trained with DDP's default hook,
``fp16_compress_hook`` and ``powerSGD_hook`` side by side; what each sends, and what it costs
in accuracy."""

from __future__ import annotations

from ddp_viz.kinds.hook_compression import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.hook_compression.model import KIND, HooksRecord, HooksSpec, complete_steps
from ddp_viz.kinds.hook_compression.report import hooks_report, running_line, status_line
from ddp_viz.kinds.hook_compression.scene import build
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
        scenes={"hooks_tradeoff": build},
        phase_words={"hooks_tradeoff": ("bytes", "error", "P · Q", "loss")},
        report=hooks_report,
        status=status_line,
        running=running_line,
        quantities={
            "hook_bytes": QuantitySource(
                _bytes, phase="step", needs_param=True, unit="a number of bytes"
            )
        },
        field_names={
            "hook_compression.steps": "Steps",
            "hook_compression.ranks": "PowerSGD ranks",
            "hook_compression.warmup": "Warm-up steps",
            "hook_compression.error_feedback": "Error feedback",
            "hook_compression.width": "Hidden width",
            "hook_compression.lr": "Learning rate",
        },
        trains=False,
        plots=False,
    )
)
