"""Gradients DDP never averaged, though the script trained (pure): a forward that went around
DDP, and ``no_sync()`` left on for every backward.

DDP averages a step's gradients only after its own forward has prepared its reducer for the
backward (``DistributedDataParallel._post_forward`` calls ``reducer.prepare_for_backward``).
A script that calls ``model.module(x)``, or goes on calling the model it wrapped, trains each
rank on its own gradients: no error, no hang, ranks that drift apart (two ranks' weights
differed after three such steps here). The watch's steps begin at DDP's forward too, so the
report of such a run said nothing at all: 0 steps, no verdict.

``model.no_sync()`` skips the all-reduce of the backwards after the forwards run inside it: it
is meant for all but the last micro-step of a gradient accumulation. Left on for every step
(the synced micro-step forgotten), it too trains each rank alone, and the report was as silent.
"""

from __future__ import annotations

from ddp_viz.kinds.watched.doctor import rank_list
from ddp_viz.kinds.watched.events import WatchAround, WatchNeverSynced


def _who(events: list[WatchAround] | list[WatchNeverSynced], world: int) -> str:
    ranks = sorted({e.rank for e in events})
    return "every rank" if len(ranks) == world > 1 else rank_list(ranks)


def _site(events: list[WatchAround] | list[WatchNeverSynced]) -> str:
    return min(events, key=lambda e: e.rank).site


def text(events: list[WatchAround], world: int) -> str:
    """The finding, for the report and the page."""
    return (
        f"✗ around DDP: {_who(events, world)} computed gradients without a forward through DDP "
        f"(backward at {_site(events)}): a forward through model.module(x), or through the model "
        "DDP wrapped, leaves DDP unprepared for the backward, so it averages nothing and each "
        "rank trains on its own gradients; call the DDP model itself: model(x)"
    )


def verdict(events: list[WatchAround], world: int) -> str:
    return (
        f"ddp-viz verdict: DDP averaged no gradient: {_who(events, world)} ran the forward "
        f"around DDP (backward at {_site(events)}); call the DDP model itself"
    )


def never_text(events: list[WatchNeverSynced], world: int) -> str:
    """The finding for ranks whose every backward ran under ``no_sync()``."""
    most = max(e.backwards for e in events)
    return (
        f"✗ never averaged: {_who(events, world)} ran every backward ({most} on a rank) after a "
        f"forward inside model.no_sync() (first at {_site(events)}), so DDP all-reduced none "
        "and each rank trained on its own gradients: no_sync() is for all but the last "
        "micro-step of an accumulation; run that one outside it"
    )


def never_verdict(events: list[WatchNeverSynced], world: int) -> str:
    return (
        f"ddp-viz verdict: DDP averaged no gradient: {_who(events, world)} ran every backward "
        f"inside model.no_sync() (first at {_site(events)})"
    )


def no_step(around: list[WatchAround], never: list[WatchNeverSynced]) -> str | None:
    """Why the page has no step to show, when it is one of these: its steps begin at DDP's
    forward and are the backwards DDP all-reduced."""
    if around:
        return "No step of your script reached ddp-viz: its forwards went around DDP (above)."
    if never:
        return (
            "No step of your script reached ddp-viz: DDP all-reduced none of its backwards (above)."
        )
    return None
