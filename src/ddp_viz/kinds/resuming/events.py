"""Events of a run of the restart lesson (``[resuming]``). Pure model layer; defining them
registers them (:mod:`ddp_viz.model.event_base`).

Part one, on the lesson's own ranks: rank 0 reports the checkpoint it saved
(:class:`CheckpointSaved`), every rank what it loaded (:class:`CheckpointLoaded`) and, for
each way of resuming, how its resumed run compares with the run never stopped
(:class:`ResumeCompared`). Part two, under torchrun: rank 0 reports every attempt of every
torchrun worker as the workers logged it (:class:`RestartAttempt`) and what the whole run came
to (:class:`RestartOutcome`). Sharded state, on the lesson's ranks: FSDP2's saved at one world
size and loaded at another (:class:`ReshardCompared`), and ZeRO's gathered on rank 0
(:class:`ZeroConsolidated`). Weights are compared as CRC-32s of their bytes (8 hex digits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ddp_viz.model.event_base import Event

# the version of these events (the kind's, in every recording's header; see
# ddp_viz.model.recording_format): 2 added ZeRO's (ZeroConsolidated)
EVENTS_VERSION = 2


def _added_zero(obj: dict[str, Any]) -> dict[str, Any]:
    """Version 1 to 2 only added ZeRO's event: an event of 1 is one of 2 (its run shows
    without the ZeRO part)."""
    return obj


UPGRADES = {1: _added_zero}

Variant = Literal["everything", "no_epoch", "no_rng", "no_optimizer"]
Ending = Literal["finished", "killed", "stopped", "failed"]


@dataclass(frozen=True)
class CheckpointSaved(Event):
    """Rank 0 saved the checkpoint after ``step`` steps: ``bytes`` on disk, the checkpoint's
    top-level ``keys``, and a CRC-32 of the model's parameters it holds."""

    kind: ClassVar[str] = "checkpoint_saved"
    run: int
    rank: int
    step: int
    bytes: int
    keys: list[str]
    weights: str


@dataclass(frozen=True)
class CheckpointLoaded(Event):
    """One rank loaded the checkpoint with ``map_location`` after the barrier: the CRC-32 of
    the parameters it loaded and the seconds it waited in the barrier for rank 0's save."""

    kind: ClassVar[str] = "checkpoint_loaded"
    run: int
    rank: int
    step: int
    weights: str
    waited: float
    map_location: str


@dataclass(frozen=True)
class ResumeCompared(Event):
    """One rank, one way of resuming (``variant``: which piece the resume left out), against
    the run that was never stopped. In the first resumed step: the rows the rank's sampler
    gave (``rows``; the run never stopped gave ``rows_want`` there, and ``rows_start`` in its
    first step), how many places of the dropout
    mask differ (of ``mask_size``) and Adam's ``step`` after it (``adam_step_want`` never
    stopped). At the end: the largest ``|p − p_never_stopped|`` and the two CRC-32s."""

    kind: ClassVar[str] = "resume_compared"
    run: int
    rank: int
    variant: Variant
    rows: list[int]
    rows_want: list[int]
    rows_start: list[int]
    mask_diff: int
    mask_size: int
    adam_step: float
    adam_step_want: float
    max_diff: float
    weights: str
    weights_want: str


@dataclass(frozen=True)
class RestartAttempt(Event):
    """One torchrun worker's attempt (``attempt`` is ``TORCHELASTIC_RESTART_COUNT``), from
    its own log: its pid, the port of torchrun's store it joined through (``MASTER_PORT``),
    the step it resumed from, the steps it had done when it ended, the
    checkpoints it saved (rank 0) and how it ended: finished, killed (it sent itself SIGKILL),
    stopped (torchrun ended it, the worker said nothing) or failed (it raised ``error``)."""

    kind: ClassVar[str] = "restart_attempt"
    run: int
    rank: int
    attempt: int
    pid: int
    store_port: int
    start_step: int
    last_step: int
    saved: list[int]
    end: Ending
    error: str


@dataclass(frozen=True)
class RestartOutcome(Event):
    """The torchrun run as a whole (sent by rank 0): torchrun's exit code, the restarts it
    made (the highest ``TORCHELASTIC_RESTART_COUNT`` a worker saw) of ``max_restarts``, the
    checkpoint interval, the worker killed and after which step, the step the last attempt
    resumed from, the attempts whose rendezvous failed, how far its final weights are from
    the run never stopped (largest difference, both CRC-32s), its seconds, the checkpoint
    files found half written (``*.tmp``) once it ended, and how many times torchrun's log
    says it sent a worker SIGTERM ("Sending process … closing signal SIGTERM")."""

    kind: ClassVar[str] = "restart_outcome"
    run: int
    rank: int
    exit_code: int
    restarts: int
    max_restarts: int
    interval: int
    killed_rank: int
    killed_after: int
    resumed_from: int
    mesh_failures: int
    max_diff: float
    weights: str
    weights_want: str
    seconds: float
    left_behind: int
    sigterms: int


@dataclass(frozen=True)
class ReshardCompared(Event):
    """Sharded state, saved at one world size and loaded at another: the model trained one
    step with FSDP2 (``fully_shard``) and Adam on ``saved_at`` ranks, saved with
    ``torch.distributed.checkpoint``, then loaded into a model sharded over the first
    ``loaded_at`` ranks. ``bytes`` is the size of this rank's own file of the checkpoint;
    ``rows`` the rows of each parameter this rank held after loading (empty off the loading
    ranks); ``max_diff`` the largest difference between the parameters it loaded (gathered
    whole) and those it saved, -1 off the loading ranks; ``adam_step`` Adam's step loaded."""

    kind: ClassVar[str] = "reshard_compared"
    run: int
    rank: int
    saved_at: int
    loaded_at: int
    bytes: int
    rows: dict[str, int]
    max_diff: float
    adam_step: float


@dataclass(frozen=True)
class ZeroConsolidated(Event):
    """ZeRO's optimizer state, sharded and then gathered on rank 0 to be saved: one step of the
    model under DDP with ``ZeroRedundancyOptimizer`` over Adam on ``world`` ranks. ``owned``
    names the parameters whose Adam state this rank holds and ``state_bytes`` that state's
    bytes; after ``consolidate_state_dict(to=0)``, rank 0's ``state_dict()`` holds
    ``full_params`` parameters' state, ``full_bytes`` of tensors, saved in a file of
    ``saved_bytes``, and ``state_diff`` is its largest difference from a plain Adam's state
    after the same step (-1 for these four off rank 0). ``weights_diff``: this rank's parameters
    against the plain Adam's. ``refused``: what ``state_dict()`` raised on this rank (empty on
    rank 0)."""

    kind: ClassVar[str] = "zero_consolidated"
    run: int
    rank: int
    world: int
    owned: list[str]
    state_bytes: int
    full_params: int
    full_bytes: int
    saved_bytes: int
    state_diff: float
    weights_diff: float
    refused: str
