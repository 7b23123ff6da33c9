"""Events of a comm-hooks run (``[hook_compression]``): one model, several DDP comm hooks.

Pure model layer. Every rank reports every variant's every step (:class:`HookStep`); rank 0
also reports, for the first PowerSGD variant, the low-rank factors P and Q of one layer beside
the exact averaged gradient they approximate (:class:`HookLowRank`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddp_viz.model.event_base import Event, Grads


@dataclass(frozen=True)
class HookStep(Event):
    """One rank, one variant, one step (from 0).

    ``sent[b]`` is the bytes this rank handed to ``dist.all_reduce`` for bucket ``b`` (counted
    as the hook called it, every call), ``calls[b]`` how many all-reduces that took and
    ``names[b]`` the bucket's parameters. ``errors`` is, per parameter, the relative error
    ``‖hook − exact‖ / ‖exact‖`` of the gradient the hook produced against the float64 average
    of every rank's local gradient. ``residual`` is the norm of the error PowerSGD's error
    feedback carries into the next step on this rank (0 without it). ``local`` and
    ``averaged`` (the gradients themselves) travel only when the spec asks for them.
    """

    kind: ClassVar[str] = "hook_step"
    run: int
    rank: int
    variant: str
    step: int
    loss: float
    sent: list[int]
    calls: list[int]
    names: list[list[str]]
    errors: dict[str, float]
    residual: float = 0.0
    compressed: bool = False
    local: Grads = field(default_factory=dict)
    averaged: Grads = field(default_factory=dict)


@dataclass(frozen=True)
class HookLowRank(Event):
    """PowerSGD's factors for ``layer`` (an n × m gradient) at one compressed step: the first
    ``corner`` rows of P (n × r) and of Q (m × r), and the top-left corner × corner block of
    the exact averaged gradient and of P Qᵀ, the approximation the hook handed back."""

    kind: ClassVar[str] = "hook_low_rank"
    run: int
    variant: str
    step: int
    layer: str
    shape: list[int]
    rank_r: int
    p: list[list[float]]
    q: list[list[float]]
    exact: list[list[float]]
    approx: list[list[float]]
