"""When a rank dies (``[restart]``): save and load a checkpoint under DDP, resume with and
without each piece of state, and a rank killed under ``torchrun --max-restarts``, each held
against the same run never stopped."""

from __future__ import annotations

from ddp_viz.kinds.restart import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.restart.record import (
    RestartRecord,
    complete_steps,
    restarts_quantity,
    steps_lost_quantity,
)
from ddp_viz.kinds.restart.report import restart_report, status_line
from ddp_viz.kinds.restart.scene import PHASE_WORDS, build
from ddp_viz.kinds.restart.spec import KIND, RestartSpec
from ddp_viz.model.registry import QuantitySource, RunKind, register

register(
    RunKind(
        id=KIND,
        table=KIND,
        spec=RestartSpec,
        part=RestartRecord,
        complete_steps=complete_steps,
        scenes={"restart": build},
        phase_words={"restart": PHASE_WORDS},
        report=restart_report,
        status=status_line,
        quantities={
            "steps_lost": QuantitySource(
                steps_lost_quantity, phase="step", unit="a number of steps"
            ),
            "restarts": QuantitySource(restarts_quantity, phase="allreduce", unit="a number"),
        },
        field_names={
            "restart.interval": "Checkpoint every",
            "restart.kill_after": "Kill after step",
            "restart.max_restarts": "Max restarts",
            "restart.resume_epoch": "Resume after epoch",
        },
        trains=False,
        plots=False,
    )
)
