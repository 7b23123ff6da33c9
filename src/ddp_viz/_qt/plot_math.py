"""Numbers behind the plots: the symmetric log scale, titles, the loss surface grid (numpy)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddp_viz.model import registry
from ddp_viz.model.timeline import RunRecord


def full_batch_loss_grid(
    x: list[float], y: list[float], ws: np.ndarray, bs: np.ndarray
) -> np.ndarray:
    """Mean squared error of w·x + b over all rows, on a (w, b) grid (numpy, no torch)."""
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    W, B = np.meshgrid(ws, bs, indexing="ij")
    pred = W[..., None] * xa + B[..., None]
    return ((pred - ya) ** 2).mean(axis=-1)


DASH_NAMES = ("solid", "dashed", "dotted", "dash-dot")
SYMLOG_ABOVE = 1e4  # a plot whose values pass this switches to a symmetric log axis


def symlog(y: np.ndarray) -> np.ndarray:
    """sign(y)·log10(1 + |y|): growing oscillations stay visible from 1 to 1e300."""
    return np.sign(y) * np.log10(1.0 + np.abs(y))


def symlog_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    top = int(np.ceil(max(abs(lo), abs(hi), 1.0)))
    step = max(1, top // 6)
    ticks = [(0.0, "0")]
    for k in range(step, top + 1, step):
        v = float(np.log10(1.0 + 10.0**k))
        ticks += [(v, f"1e{k}"), (-v, f"-1e{k}")]
    return ticks


def param_title(record: RunRecord) -> str:
    """The parameter plot's title names each parameter's line style (‖·‖ for tensors); a big
    model's plot says how many there are (the tooltip names them)."""
    marks = ("—", "--", "··", "-·")
    parts = [
        f"{p.name if p.numel == 1 else '‖' + p.name + '‖'} ({marks[i % 4]})"
        for i, p in enumerate(record.params)
    ]
    if by_tensor(record):
        # tensors, not parameters: the lesson text counts a model's parameters as numbers;
        # each tensor has its colour (the legend names them), each rank its marker
        # (short lines: a longer title widened the plot past a projector's 1280 px)
        return "‖·‖ per tensor (colour)<br>and per rank (marker)"
    # two lines: on one, a projector's 1280 px cut it at "weight (—), b"
    return "Parameters<br>" + ", ".join(parts) if parts else "Parameters"


def kind_curves(record: RunRecord) -> Any:
    """The curves a run's kind draws in place of the loss and the parameters (its Qt part's
    ``CURVES``: titles, label, tooltip, each step's points, the phase they show from), or
    None for the lessons' own."""
    parts = registry.load_parts("qt")
    for kind in record.kinds():
        part = parts.get(kind.id)
        if part is not None and hasattr(part, "CURVES"):
            return part.CURVES
    return None


def by_tensor(record: RunRecord) -> bool:
    """Does the parameter plot tell its curves apart by tensor (a colour each, a marker per
    rank) rather than by rank (a rank's colour, a dash per parameter)? With more than two
    parameters: four dashes cannot name eight tensors, and the ranks' curves coincide."""
    return len(record.params) > 2 and not record.foreign_model


def has_surface(record: RunRecord) -> bool:
    """The loss surface is drawn for y = w·x + b only: nn.Linear(1, 1), two parameters, in a
    lesson's run (a user's script's model and rows are its own)."""
    if record.foreign_model:
        return False
    return record.scenario.get("model", {}).get("kind", "linear") == "linear"


def x_extent(record: RunRecord, done: int, short_up_to: int) -> int:
    """Steps the x axis spans: the whole run when short; for a long run, or a watched one
    whose length is not known, a range that doubles as it streams, so its first steps are
    not squeezed into the left edge."""
    planned = record.steps_planned
    if 0 < planned <= short_up_to:
        return planned
    doubled = max(50, 2 ** math.ceil(math.log2(max(1, done) * 1.25)))
    return min(planned, doubled) if planned else doubled
