"""Gradient accumulation with ``no_sync``: several micro-batches make one optimizer step, and
``with model.no_sync():`` (around forward and backward, or backward only) decides which
backward passes all-reduce. The stage shows ``.grad`` after each backward and the all-reduces
DDP's comm hook counted.

It has no table of its own: the core's ``[train] accumulate`` and ``no_sync`` knobs make a run of
this kind. Its lessons deal their rows with a sampler too (that kind's engine part deals them);
a scenario that accumulates is this kind's lesson's (a higher precedence than the sampler's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddp_viz.kinds.accumulation.counts import allreduces_quantity
from ddp_viz.kinds.accumulation.reasons import differs
from ddp_viz.kinds.accumulation.record import KIND, AccumulationRecord, rows_of_step
from ddp_viz.kinds.accumulation.report import micro_lines
from ddp_viz.kinds.accumulation.scene import build
from ddp_viz.model.registry import QuantitySource, RunKind, register


def claims(scenario: Mapping[str, Any]) -> bool:
    """A scenario with more than one micro-batch a step, or ``no_sync`` placed anywhere."""
    train = scenario.get("train", {})
    return int(train.get("accumulate", 1)) > 1 or train.get("no_sync", "none") != "none"


register(
    RunKind(
        id=KIND,
        claims=claims,
        precedence=1,  # above the sampler's claim: its lessons run on a sampler too
        values_every_step=True,  # the lesson is about what happens inside each step
        part=AccumulationRecord,  # each rank's micro-batches of each step
        scenes={"accumulation": build},
        phase_words={"accumulation": ("micro-batches", "backward", "synchronised", "step")},
        differs=differs,
        rank_lines=micro_lines,  # each rank's micro-batches under its rows in the report
        rows_of_step=rows_of_step,  # a step's micro-batches may span two epochs
        field_names={
            "train.accumulate": "Micro-batches",
            "train.scale_loss": "loss ÷ k",
            "train.no_sync": "no_sync()",
        },
        # how many times DDP's comm hook ran in an optimizer step, shown as it all-reduces
        quantities={
            "allreduces": QuantitySource(
                allreduces_quantity, phase="allreduce", unit="a number of all-reduces"
            )
        },
    )
)
