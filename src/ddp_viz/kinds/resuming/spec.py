"""When a rank dies (``[resuming]``): the scenario table. Pure model layer.

The run trains a small regression MLP with dropout, Adam and a ``DistributedSampler`` for
``epochs`` epochs. Part one: rank 0 saves a checkpoint after ``resume_epoch`` epochs, the
ranks wait at a barrier and each loads it with ``map_location``; then the ranks resume from
it four ways (everything restored, and each time one piece left out) and compare the final
weights with the run that was never stopped. Part two: ``torchrun --max-restarts
max_restarts`` starts the same training, saving every ``interval`` steps; the last rank kills
itself with SIGKILL after step ``kill_after`` of the first attempt, torchrun restarts every
rank, and they resume from the last checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.plain_table import PlainTable, knob

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario

KIND = "resuming"
FEATURES = 4  # inputs of every row
# the pieces a resume can leave out of the checkpoint, in the order the stage shows them
VARIANTS = ("everything", "no_epoch", "no_rng", "no_optimizer")
LABELS = {
    "everything": "everything restored",
    "no_epoch": "sampler's epoch left out",
    "no_rng": "RNG state left out",
    "no_optimizer": "optimizer state left out",
}


@dataclass(frozen=True)
class RestartSpec(PlainTable):
    """``epochs`` epochs of ``rows`` rows shared by ``DistributedSampler`` (``batch`` rows a
    rank a step) on Linear(4, hidden) → tanh → Dropout(dropout) → Linear(hidden, 1) with
    Adam; part one resumes after ``resume_epoch`` epochs, part two saves every ``interval``
    steps and loses the last rank after step ``kill_after`` of torchrun's first attempt."""

    rows: int = knob(48, low=8, high=512)
    batch: int = knob(4, low=1, high=64)
    epochs: int = knob(4, low=2, high=20)
    resume_epoch: int = knob(
        2,
        low=1,
        high=19,
        label="Resume after epoch",
        tip="part one saves after this many epochs, below epochs",
    )
    hidden: int = knob(16, low=2, high=64)
    dropout: float = knob(0.5, low=0.05, high=0.95)
    lr: float = knob(0.01, rate=True, high=1)
    seed: int = knob(0, low=0, high=2**31 - 1)
    interval: int = knob(
        3,
        low=1,
        high=100,
        label="Checkpoint every",
        tip="steps between checkpoints under torchrun, 1–100",
    )
    kill_after: int = knob(
        5,
        low=1,
        high=1000,
        label="Kill after step",
        tip="the last rank sends itself SIGKILL after this step",
    )
    max_restarts: int = knob(
        3, low=1, high=5, label="Max restarts", tip="torchrun --max-restarts, 1–5"
    )
    # the workers join through keys of their attempt's own (a PrefixStore): torchrun's store
    # outlives an attempt, and without a prefix a restarted rank can read a dead peer's address
    attempt_keys: bool = knob(True)

    TABLE: ClassVar[str] = KIND
    trains: ClassVar[bool] = False  # the program trains its own model, not the core's

    def check(self) -> None:
        if self.resume_epoch >= self.epochs:
            raise ScenarioError(f"{KIND}.resume_epoch", "must be below epochs")

    def fixed_steps(self, world: int) -> int:
        """One step: the stage's four phases are the lesson's four parts."""
        return 1

    def check_scenario(self, s: Scenario) -> None:
        if not 2 <= s.world_size <= 8:
            raise ScenarioError("world_size", "a rank dying needs 2 to 8 ranks")
        if s.world_size > self.rows:
            raise ScenarioError(f"{KIND}.rows", f"{s.world_size} ranks need {s.world_size} rows")
        total = self.total_steps(s.world_size)
        if self.kill_after >= total:
            raise ScenarioError(
                f"{KIND}.kill_after",
                f"must be below the run's {total} steps at {s.world_size} ranks",
            )
        if s.steps != 1:
            raise ScenarioError("steps", f"[{KIND}] epochs sets the training; leave steps out")

    def steps_per_epoch(self, world: int) -> int:
        """A ``DistributedSampler(drop_last=False)`` gives each rank ``ceil(rows / world)``
        places; ``batch`` at a time makes this many steps an epoch."""
        share = -(-self.rows // world)
        return -(-share // self.batch)

    def total_steps(self, world: int) -> int:
        return self.epochs * self.steps_per_epoch(world)

    def resume_step(self, world: int) -> int:
        """The step part one's checkpoint is saved after (an epoch's end)."""
        return self.resume_epoch * self.steps_per_epoch(world)


def steps_lost(kill_after: int, interval: int) -> int:
    """Steps a rank dying after step ``kill_after`` costs when a checkpoint is saved after
    every ``interval`` steps: those since the last one."""
    return kill_after % interval
