"""When a rank dies (``[resuming]``): save and load a checkpoint under DDP, resume with and
without each piece of state, and a rank killed under ``torchrun --max-restarts``, each held
against the same run never stopped."""

from __future__ import annotations

from ddp_viz.kinds.resuming import events as _events  # defines its events, so registers
from ddp_viz.kinds.resuming.record import (
    RestartRecord,
    complete_steps,
    restarts_quantity,
    steps_lost_quantity,
)
from ddp_viz.kinds.resuming.report import restart_report, status_line
from ddp_viz.kinds.resuming.scene import PHASE_WORDS, build
from ddp_viz.kinds.resuming.spec import KIND, RestartSpec
from ddp_viz.model.registry import QuantitySource, RunKind, register

register(
    RunKind(
        id=KIND,
        table=KIND,
        spec=RestartSpec,
        part=RestartRecord,
        complete_steps=complete_steps,
        scenes={"resuming": build},
        phase_words={"resuming": PHASE_WORDS},
        report=restart_report,
        events_version=_events.EVENTS_VERSION,
        upgrades=_events.UPGRADES,
        status=status_line,
        quantities={
            "steps_lost": QuantitySource(
                steps_lost_quantity, phase="step", unit="a number of steps"
            ),
            "restarts": QuantitySource(restarts_quantity, phase="allreduce", unit="a number"),
        },
        field_names=RestartSpec.field_names(),
        trains=False,
        plots=False,
    )
)
