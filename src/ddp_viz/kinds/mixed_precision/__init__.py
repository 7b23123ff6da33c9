"""Mixed precision under DDP (``[mixed_precision]``): what autocast changes, loss scaling that
every rank skips together, and bfloat16 or float16 on the wire, from one run of five arms."""

from __future__ import annotations

from ddp_viz.kinds.mixed_precision import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.mixed_precision.model import (
    KIND,
    PrecisionRecord,
    PrecisionSpec,
    complete_steps,
    spec_of,
)
from ddp_viz.kinds.mixed_precision.report import precision_report, status_line
from ddp_viz.kinds.mixed_precision.scene import build
from ddp_viz.model.registry import QuantitySource, RunKind, register
from ddp_viz.model.timeline import RunRecord


def _first_skip(record: RunRecord, quantity: object) -> float | None:
    """The first step (from 1) the scaler's arm skipped on some rank; 0 when none did.
    Known once the run is over."""
    part = record.parts.get(KIND)
    if part is None:
        return None
    n = complete_steps(record)
    if n < spec_of(record).steps:
        return None
    first = part.first_skip(n, record.world_size)
    return 0.0 if first is None else float(first + 1)


def _sent(record: RunRecord, quantity: object) -> float | None:
    """Bytes one rank handed to all-reduce in one step of one arm (``param``)."""
    part = record.parts.get(KIND)
    if part is None:
        return None
    e = part.at(quantity.param, quantity.step - 1).get(quantity.rank)  # type: ignore[attr-defined]
    return None if e is None else float(e.sent)


register(
    RunKind(
        id=KIND,
        table=KIND,
        spec=PrecisionSpec,
        part=PrecisionRecord,
        complete_steps=complete_steps,
        scenes={"precision": build},
        phase_words={"precision": ("dtypes", "loss", "scaler", "wire")},
        report=precision_report,
        status=status_line,
        quantities={
            "skipped_step": QuantitySource(
                _first_skip, phase="allreduce", unit="a step number", at_end=True
            ),
            "precision_bytes": QuantitySource(
                _sent, phase="step", needs_param=True, unit="a number of bytes"
            ),
        },
        field_names={
            "mixed_precision.steps": "Steps",
            "mixed_precision.spike_step": "Spike at step",
            "mixed_precision.growth_interval": "Growth interval",
            "mixed_precision.init_scale": "Initial scale",
            "mixed_precision.tiny": "Tiny inputs ×",
        },
        trains=False,
        plots=False,
    )
)
