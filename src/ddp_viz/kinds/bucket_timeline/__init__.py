"""Buckets: DDP packs the gradients into buckets of ``[ddp] bucket_cap_mb`` and all-reduces each
as soon as it is full, while backward still runs. The stage shows one step on a shared time
axis: when each gradient became ready, each bucket's all-reduce, and how much overlapped.

It has no table of its own: an MLP with buckets smaller than DDP's default (or one wide enough
to need several at the default) is about this kind. The core records most of what it shows (the
capture hook's ready times and bucket spans, every DDP run's). What overlap cost backward is the
kind's own: with ``[train] overlap_cost``, any DDP run's, its engine part times backward after
the loop (``backward_cost``), its part folds that, and the report says it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddp_viz.kinds.bucket_timeline.overlap import report_lines
from ddp_viz.kinds.bucket_timeline.record import KIND, BucketRecord
from ddp_viz.kinds.bucket_timeline.scene import build
from ddp_viz.model.modelspec import DEFAULT_BUCKET_CAP_MB
from ddp_viz.model.registry import RunKind, register

WIDE = 64  # a hidden layer this wide fills more than one bucket at DDP's default cap


def claims(scenario: Mapping[str, Any]) -> bool:
    """An MLP in buckets smaller than DDP's default, or a wide one (the lesson's own with its
    cap raised to 25 MB, as its quiz suggests)."""
    model = scenario.get("model", {})
    if model.get("kind") != "mlp":
        return False
    cap = scenario.get("ddp", {}).get("bucket_cap_mb", DEFAULT_BUCKET_CAP_MB)
    return cap < DEFAULT_BUCKET_CAP_MB or max(model.get("hidden", [0]), default=0) >= WIDE


register(
    RunKind(
        id=KIND,
        claims=claims,
        # overlap's cost is measured in any DDP run whose [train] overlap_cost is set, whatever
        # lesson shows it: the part and the engine part join every run
        every_run=True,
        train_flags={
            "overlap_cost": "after the loop, time backward with DDP's all-reduces against backward "
            "inside no_sync(), alternating: what the overlapped all-reduces cost backward"
        },
        part=BucketRecord,
        report_lines=report_lines,
        precedence=-1,  # below the sampler and accumulation: their lessons run MLPs in buckets too
        scenes={"bucket_timeline": build},
        phase_words={"bucket_timeline": ("buckets", "ready", "all-reduce", "overlap")},
    )
)
