"""Stage scenes: pure functions from a recorded run and a position to a :class:`StageFrame`.

A lesson names its scene in ``lesson.toml``; the Qt stage draws whatever frame the scene
builds. Every scene is a kind of run's (its folder's ``RunKind.scenes``), found through
:mod:`ddp_viz.model.registry`.
"""

from __future__ import annotations

from collections.abc import Callable

from ddp_viz.model import registry
from ddp_viz.model.frame import StageFrame
from ddp_viz.model.scenes.base import empty_frame
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import PHASES, Cursor, RunRecord

SceneBuilder = Callable[[RunRecord | None, Cursor, float, SceneContext], StageFrame]

# the toolbar's word for each phase: DDP's step for the training scenes, unless a scene has its own
DDP_WORDS = ("shards", "local", "all-reduce", "step")


def scenes() -> dict[str, SceneBuilder]:
    """Every scene by name: every kind's."""
    out: dict[str, SceneBuilder] = {}
    for kind in registry.kinds():
        out.update(kind.scenes)
    return out


def phases_of(scene: str) -> tuple[str, ...]:
    """The four animation phases every scene plays (named as the DDP step's)."""
    return PHASES


def phase_words(scene: str) -> tuple[str, ...]:
    """The toolbar's word for each of ``scene``'s phases."""
    for kind in registry.kinds():
        if scene in kind.phase_words:
            return kind.phase_words[scene]
    return DDP_WORDS


def whole_steps(scene: str) -> bool:
    """Whether the player moves ``scene`` a whole step at a time (Right: the next step)."""
    return any(k.whole_steps and scene in k.scenes for k in registry.kinds())


def stage_frame(
    record: RunRecord | None,
    cursor: Cursor,
    progress: float,
    context: SceneContext,
    scene: str | None = None,
) -> StageFrame:
    """Everything the stage shows at ``cursor`` (``progress`` 0–1 through its phase), in
    ``scene`` (None: DDP training's, the default kind's)."""
    if record is None or record.world_size == 0:  # no run yet: the same message for every scene
        return empty_frame(context)
    return scenes()[scene or registry.default_scene()](record, cursor, progress, context)


__all__ = ["SceneContext", "phase_words", "phases_of", "scenes", "stage_frame", "whole_steps"]
