"""How the DDP step scene names a parameter and lines a label up with its number."""

from __future__ import annotations

from ddp_viz.model.modelspec import ParamInfo
from ddp_viz.model.scenes.base import short_name


def baseline(label: float, number: float) -> float:
    """How far below its row's top a label of type ``label`` starts, to share the baseline
    of a number of type ``number`` (the ascent is about 0.76 em)."""
    return (number - label) * 0.76


def grad_label(p: ParamInfo) -> str:
    return f"∇{short_name(p.name)}" if p.numel == 1 else f"‖∇{short_name(p.name)}‖"


def param_label(p: ParamInfo) -> str:
    return short_name(p.name) if p.numel == 1 else f"‖{short_name(p.name)}‖"
