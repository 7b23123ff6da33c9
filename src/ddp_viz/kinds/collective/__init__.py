"""The all-reduce itself (``[collective]``): naive and ring all-reduce by hand, chunk by chunk,
against ``dist.all_reduce``. No DDP and no training: the ranks' vectors are the run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ddp_viz.kinds.collective import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.collective.model import CollectiveRecord, CollectiveSpec
from ddp_viz.kinds.collective.report import collective_report, status_line, trace_spans
from ddp_viz.kinds.collective.scene import build
from ddp_viz.model.registry import QuantitySource, RunKind, register
from ddp_viz.model.timeline import RunRecord

if TYPE_CHECKING:
    from ddp_viz.model.quiz import Quantity

KIND = "collective"


def _bytes_of(algo: str) -> Any:
    def read(record: RunRecord, quantity: Quantity) -> float | None:
        """Bytes the rank sent in the hand-made all-reduce (on the stage at the last step)."""
        part = record.parts.get(KIND)
        result = part.results.get((algo, quantity.rank)) if part is not None else None
        return None if result is None else float(result.bytes_sent)

    return read


register(
    RunKind(
        id=KIND,
        table="collective",
        spec=CollectiveSpec,
        part=CollectiveRecord,
        complete_steps=lambda rec: rec.parts[KIND].complete_steps(rec.world_size),
        scenes={"ring": build},
        phase_words={"ring": ("picks", "travel", "arrive", "holds")},
        report=collective_report,
        status=status_line,
        trace_spans=trace_spans,
        quantities={
            "ring_bytes": QuantitySource(_bytes_of("ring"), phase="step", unit="a number of bytes"),
            "naive_bytes": QuantitySource(
                _bytes_of("naive"), phase="step", unit="a number of bytes"
            ),
        },
        field_names={"collective.length": "Values per rank"},
        trains=False,
        plots=False,
        listing_checked_by="tests/kinds/collective/test_listing_is_the_ring.py",
    )
)
