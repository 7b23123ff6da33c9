"""The DDP step (the ddp-pattern and every-parameter lessons): each rank's shard, its local
gradient, DDP's all-reduced average against one process on every row, and the same parameters
on every rank after ``optimizer.step()``.

It is DDP training itself, which the other kinds add to (the sampler deals its rows,
accumulation runs its passes, not-averaged reads its buffers): the default kind, whose scene a
lesson shows when it names none, and which every training run is, at the lowest precedence.
Its engine is the core's training loop (:mod:`ddp_viz.engine.trainer`), which every kind's hooks
join; it has no engine part of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddp_viz.kinds.ddp_step.scene import build
from ddp_viz.model import registry
from ddp_viz.model.registry import RunKind, register

KIND = "ddp_step"


def claims(scenario: Mapping[str, Any]) -> bool:
    """Every run ddp-viz trains itself takes the DDP step (a kind's table may replace the
    run); a run of a model not ddp-viz's (a user's own script) is that script's."""
    return not any(k.foreign_model and k.owns(scenario) for k in registry.kinds())


register(
    RunKind(
        id=KIND,
        default=True,
        claims=claims,
        precedence=-10,  # every other claim comes first: it is what they add to
        scenes={"ddp_step": build},
    )
)
