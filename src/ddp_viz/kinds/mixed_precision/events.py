"""Events of a mixed-precision run (``[mixed_precision]``): one model trained several ways.

Pure model layer. Every rank reports every arm's every step (:class:`PrecisionStep`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddp_viz.model.event_base import Event, Grads


@dataclass(frozen=True)
class PrecisionStep(Event):
    """One rank, one arm, one step (from 0).

    ``dtypes`` names the dtype the rank saw for ``activation`` (the first Linear's output),
    ``param``, ``grad`` (``.grad`` after backward), ``bucket`` (``bucket.buffer()`` in the comm
    hook), ``wire`` (what the hook handed to ``dist.all_reduce``) and ``loss``. ``param_diff``
    is the largest ``|p − p_float32|`` over the parameters after the step, against the float32
    arm on the same rank. ``scale`` is the GradScaler's scale this step's backward used and
    ``next_scale`` the one ``update()`` left (0 without a scaler). ``local_inf``: the rank's
    own bucket held an inf or NaN before the all-reduce; ``averaged_inf``: the averaged one did;
    ``stepped``: ``optimizer.step()`` changed the parameters. ``sent`` is the bytes handed to
    ``dist.all_reduce``; ``error`` the relative error ``‖hook − exact‖ / ‖exact‖`` of the
    averaged gradient against the float64 average of every rank's local gradient;
    ``underflow`` how many values of the rank's local gradient were not 0 yet went on the
    wire as 0. ``local`` and ``averaged`` travel only when the spec asks for them.
    """

    kind: ClassVar[str] = "precision_step"
    run: int
    rank: int
    arm: str
    step: int
    loss: float
    dtypes: dict[str, str]
    param_diff: float
    scale: float
    next_scale: float
    local_inf: bool
    averaged_inf: bool
    stepped: bool
    sent: int
    error: float
    underflow: int
    local: Grads = field(default_factory=dict)
    averaged: Grads = field(default_factory=dict)


@dataclass(frozen=True)
class PrecisionRefused(Event):
    """Rank 0: what ``register_comm_hook`` said to ``hook`` registered under its own name
    (``message``, "" when it took it)."""

    kind: ClassVar[str] = "precision_refused"
    run: int
    hook: str
    message: str


@dataclass(frozen=True)
class PrecisionSharded(Event):
    """One rank, one FSDP2 arm (``fully_shard`` with a ``MixedPrecisionPolicy``), one step.

    ``gathered`` is the bytes this rank handed to FSDP2's all-gathers in the step (forward and
    backward), ``reduced`` to its reduce-scatters; ``dtypes`` names the ``activation`` (the
    model's output), the sharded ``param`` and its ``grad``, what was ``gather``-ed and what
    was ``reduce``-d."""

    kind: ClassVar[str] = "precision_sharded"
    run: int
    rank: int
    arm: str
    step: int
    loss: float
    dtypes: dict[str, str]
    gathered: int
    reduced: int
