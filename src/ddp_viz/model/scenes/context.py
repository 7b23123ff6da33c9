"""What a scene needs besides the run: the stage's size, the theme, the lesson's captions and a
way to measure text."""

from __future__ import annotations

from dataclasses import dataclass, field

from ddp_viz.model.frame import Measure, estimate_width
from ddp_viz.model.theme import Theme

PROJECTOR_MIN_PX = 24  # every number on a projector is at least this tall, in pixels


@dataclass(frozen=True)
class SceneContext:
    width: float
    height: float
    theme: Theme
    phase_text: dict[str, str] = field(default_factory=dict)
    measure: Measure = estimate_width
    message: str = "Press Run to start real DDP ranks on this machine."
    # which page a scene shows when a step's values do not fit at once at readable type (the
    # DDP step's tensors at 8 ranks on a projector take turns): the T key turns it; a scene
    # takes it modulo its number of pages
    page: int = 0

    @property
    def min_px(self) -> float:
        """Smallest type the scene may use: a projector's floor, else readable on a laptop."""
        return PROJECTOR_MIN_PX if self.theme.name == "projector" else 11.0

    @property
    def base_px(self) -> float:
        """Titles and checks: the theme's size, grown a little on big stages."""
        grow = min(1.4, max(1.0, min(self.width / 760, self.height / 520)))
        return self.theme.font_px * grow
