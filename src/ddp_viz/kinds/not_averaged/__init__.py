"""What DDP does not average: buffers (BatchNorm's running statistics, broadcast from rank 0
or left to drift), a parameter that gets no gradient (the reducer's error, and what
``find_unused_parameters`` costs), and a checkpoint saved by rank 0 and loaded by every rank.

It has no table of its own: it adds to every DDP training run, through the core's ``[model]``,
``[ddp]`` and ``[train]`` knobs.
"""

from __future__ import annotations

from ddp_viz.kinds.not_averaged import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.not_averaged.checks import check_scenario, claims
from ddp_viz.kinds.not_averaged.record import KIND, NotAveragedRecord
from ddp_viz.kinds.not_averaged.report import report_end, report_lines, status_line
from ddp_viz.kinds.not_averaged.scene import build
from ddp_viz.model.registry import RunKind, register

register(
    RunKind(
        id=KIND,
        part=NotAveragedRecord,
        every_run=True,
        train_flags={
            "checkpoint": "after the loop, rank 0 saves state_dict(), a barrier waits for it, "
            "and every rank loads the file with map_location"
        },
        claims=claims,
        precedence=2,  # its lessons' knobs go with any other; the scenario is about them
        check_scenario=check_scenario,
        scenes={"not_averaged": build},
        report_lines=report_lines,
        report_end=report_end,
        status=status_line,
        field_names={
            "ddp.forward_sync_buffers": "Buffers",
            "model.unused": "Unused branch",
            "ddp.find_unused_parameters": "Unused params",
        },
    )
)
