"""Uneven inputs (``[uneven]``): the last rank has more batches than the others. Without
``Join`` the run stalls until the process group's timeout ends it; with it, the finished ranks
shadow the last one's all-reduces with zeros and the run completes."""

from __future__ import annotations

from ddp_viz.kinds.uneven import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.uneven.record import (
    KIND,
    UnevenRecord,
    missing_rank,
    rank_states,
    step_ranks,
)
from ddp_viz.kinds.uneven.report import report_end, report_lines, status_line
from ddp_viz.kinds.uneven.scene import build
from ddp_viz.kinds.uneven.spec import UnevenSpec
from ddp_viz.model.registry import QuantitySource, RunKind, register

register(
    RunKind(
        id=KIND,
        table="uneven",
        spec=UnevenSpec,
        part=UnevenRecord,
        step_ranks=step_ranks,
        rank_states=rank_states,  # stuck, waited: who the hang held, as the stage says
        values_every_step=True,  # the lesson is about what happens inside each step
        scenes={"uneven": build},
        report_lines=report_lines,
        report_end=report_end,
        status=status_line,
        field_names={
            "uneven.join": "Join",  # its check box says so (the row is "Uneven")
            "uneven.extra": "Extra batches",
            "uneven.timeout_s": "Timeout",
            "uneven.debug": "Find the hang",
        },
        quantities={
            "missing_rank": QuantitySource(
                missing_rank, phase="step", unit="a rank number", at_end=True
            )
        },
    )
)
