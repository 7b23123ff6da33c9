"""What the plots draw for a watched run (pure: no Qt): each rank's arrival at the all-reduce
after the first rank's, and, at the steps captured in full, one gradient norm per rank (the
whole model's local gradient) with the average's, dashed. A model of 120 tensors drew 240
unnamed curves; one norm per rank reads at any size and the ranks' colours name them."""

from __future__ import annotations

from ddp_viz.kinds.watched.run import after_first_ms
from ddp_viz.kinds.watched.steps import gradient_norms
from ddp_viz.model.timeline import RunRecord, StepRecord

AVERAGE = "pavg"  # the averaged gradient's norm: a curve of the parameter plot's group
# the loss plot's place: each rank's arrival at the all-reduce (a straggler's line on top)
LOSS_TITLE = "Arrival at the all-reduce<br>(ms after the first rank)"
LOSS_LABEL = "ms"
WAITING = "appears as the ranks report"
HOLD_FROM = "allreduce"  # a step's first points show once its all-reduce has been shown


def title(record: RunRecord) -> str:
    return "‖gradient‖ per rank<br>(dashed: the average)"


def tooltip(record: RunRecord) -> str:
    return (
        f"Each rank's local gradient norm over the whole model ({len(record.params)} tensors, "
        "its own batch), and the "
        "averaged gradient's (dashed), at the steps captured in full (ddp-viz watch --budget). "
        "Every tensor's norms are in the Run tab (Ctrl+T)."
    )


def points(st: StepRecord) -> list[tuple[str, float]]:
    """The curves' points for one step: (curve, y), at x = step + 1."""
    out = [(f"loss{r}", ms) for r, ms in after_first_ms(st).items()]
    local, avg = gradient_norms(st)
    out += [(f"p0:{r}", v) for r, v in sorted(local.items())]
    if avg is not None:
        out.append((AVERAGE, avg))
    return out


# A watched run of any length: a curve keeps at most this many points (older ones thinned).
MAX_POINTS = 8192
