"""Who splits the data: a real ``DistributedSampler`` deals the rows (``[data] sampler =
"distributed"``), with its padding, ``drop_last`` and ``set_epoch``; the stage shows which rank
trained on which row, epoch by epoch, and DDP's average against one process on those rows.

It has no table of its own: the core's ``[data]`` table says how the rows are dealt, and a
scenario that deals them with the sampler is about this kind. Gradient accumulation runs on the
same sampler; its lesson takes such a scenario (a higher precedence), and this kind's engine
part still deals its rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddp_viz.kinds.data_split.scene import build
from ddp_viz.kinds.data_split.shares import repeats_reason
from ddp_viz.model.registry import RunKind, register

KIND = "data_split"


def claims(scenario: Mapping[str, Any]) -> bool:
    """A scenario whose rows a ``DistributedSampler`` deals."""
    return scenario.get("data", {}).get("sampler") == "distributed"


register(
    RunKind(
        id=KIND,
        claims=claims,
        scenes={"data_split": build},
        phase_words={"data_split": ("rows", "gradient", "average", "step")},
        differs=repeats_reason,
    )
)
