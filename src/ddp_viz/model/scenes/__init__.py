"""Stage scenes: pure functions from a recorded run and a position to a :class:`StageFrame`.

A lesson names its scene in ``lesson.toml``; the Qt stage draws whatever frame the scene
builds. A new lesson with a new picture is a new module here plus a line in :data:`SCENES`.
"""

from __future__ import annotations

from collections.abc import Callable

from ddp_viz.model.frame import StageFrame
from ddp_viz.model.scenes.accumulate import build as build_accumulate
from ddp_viz.model.scenes.buckets import build as build_buckets
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.scenes.data_split import build as build_data_split
from ddp_viz.model.scenes.ddp_step import build as build_ddp_step
from ddp_viz.model.scenes.not_averaged import build as build_not_averaged
from ddp_viz.model.scenes.ring import build as build_ring
from ddp_viz.model.scenes.uneven import build as build_uneven
from ddp_viz.model.scenes.watch import build as build_watch
from ddp_viz.model.timeline import PHASES, Cursor, RunRecord

SceneBuilder = Callable[[RunRecord | None, Cursor, float, SceneContext], StageFrame]

SCENES: dict[str, SceneBuilder] = {
    "ddp_step": build_ddp_step,
    "buckets": build_buckets,
    "data_split": build_data_split,
    "accumulate": build_accumulate,
    "ring": build_ring,
    "uneven": build_uneven,
    "not_averaged": build_not_averaged,
    "watch": build_watch,  # a watched run: your own script under ddp-viz watch
}
PHASES_OF: dict[str, tuple[str, ...]] = {name: PHASES for name in SCENES}
# the toolbar's word for each phase: DDP's step for the training scenes, the ring's for its own
PHASE_WORDS_OF: dict[str, tuple[str, ...]] = {
    **{name: ("shards", "local", "all-reduce", "step") for name in SCENES},
    # the scenes whose phases the stage titles in words of their own (each scene's TITLES)
    "buckets": ("buckets", "ready", "all-reduce", "overlap"),
    "data_split": ("rows", "gradient", "average", "step"),
    "accumulate": ("micro-batches", "backward", "synchronised", "step"),
    "ring": ("picks", "travel", "arrive", "holds"),
}


def stage_frame(
    record: RunRecord | None,
    cursor: Cursor,
    progress: float,
    context: SceneContext,
    scene: str = "ddp_step",
) -> StageFrame:
    """Everything the stage shows at ``cursor`` (``progress`` 0–1 through its phase)."""
    if record is None or record.world_size == 0:  # no run yet: the same message for every scene
        return build_ddp_step(record, cursor, progress, context)
    return SCENES[scene](record, cursor, progress, context)


__all__ = ["PHASES_OF", "PHASE_WORDS_OF", "SCENES", "SceneContext", "stage_frame"]
