"""When the replica does not fit (``[sharded]``): one model trained with plain DDP, DDP with
ZeRO-1 (``ZeroRedundancyOptimizer``) and FSDP2 (``fully_shard``) side by side; what each rank
holds, the collectives each way issues, and that all three train the same weights."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddp_viz.kinds.sharded import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.sharded.model import KIND, ShardedRecord, ShardedSpec, complete_steps
from ddp_viz.kinds.sharded.report import sharded_report, status_line
from ddp_viz.kinds.sharded.scene import PHASE_WORDS, build
from ddp_viz.model.registry import QuantitySource, RunKind, register
from ddp_viz.model.timeline import RunRecord

if TYPE_CHECKING:
    from ddp_viz.model.quiz import Quantity


def _held(record: RunRecord, quantity: Quantity) -> float | None:
    """Bytes of ``params``, ``grads`` or ``state`` a rank held after a step of a way
    (``param`` = ``"zero.state"``)."""
    part = record.parts.get(KIND)
    way, _, what = str(quantity.param).partition(".")
    if part is None or what not in ("params", "grads", "state", "gathered"):
        return None
    value = part.held(way, quantity.step - 1, quantity.rank, what)
    return None if value is None else float(value)


register(
    RunKind(
        id=KIND,
        table=KIND,
        spec=ShardedSpec,
        part=ShardedRecord,
        complete_steps=complete_steps,
        scenes={"sharded": build},
        phase_words={"sharded": PHASE_WORDS},
        report=sharded_report,
        status=status_line,
        quantities={
            "held_bytes": QuantitySource(
                _held, phase="shards", needs_param=True, unit="a number of bytes"
            )
        },
        field_names={
            "sharded.steps": "Steps",
            "sharded.width": "Hidden width",
            "sharded.batch": "Rows per rank",
            "sharded.lr": "Learning rate",
        },
        trains=False,
        plots=False,
    )
)
