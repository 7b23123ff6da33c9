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
from typing import TYPE_CHECKING, Any, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import flag, number, rate, wholes

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario

KIND = "resuming"
KEYS = (
    "rows",
    "batch",
    "epochs",
    "resume_epoch",
    "hidden",
    "dropout",
    "lr",
    "seed",
    "interval",
    "kill_after",
    "max_restarts",
    "attempt_keys",
)
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
class RestartSpec:
    """``epochs`` epochs of ``rows`` rows shared by ``DistributedSampler`` (``batch`` rows a
    rank a step) on Linear(4, hidden) → tanh → Dropout(dropout) → Linear(hidden, 1) with
    Adam; part one resumes after ``resume_epoch`` epochs, part two saves every ``interval``
    steps and loses the last rank after step ``kill_after`` of torchrun's first attempt."""

    rows: int = 48
    batch: int = 4
    epochs: int = 4
    resume_epoch: int = 2
    hidden: int = 16
    dropout: float = 0.5
    lr: float = 0.01
    seed: int = 0
    interval: int = 3
    kill_after: int = 5
    max_restarts: int = 3
    # the workers join through keys of their attempt's own (a PrefixStore): torchrun's store
    # outlives an attempt, and without a prefix a restarted rank can read a dead peer's address
    attempt_keys: bool = True

    trains: ClassVar[bool] = False  # the program trains its own model, not the core's

    @classmethod
    def from_mapping(cls, data: Any) -> RestartSpec:
        table = spec_table(data, KIND, KEYS)
        v: dict[str, Any] = wholes(
            table,
            KIND,
            (
                ("rows", 8, 512),
                ("batch", 1, 64),
                ("epochs", 2, 20),
                ("resume_epoch", 1, 19),
                ("hidden", 2, 64),
                ("seed", 0, 2**31 - 1),
                ("interval", 1, 100),
                ("kill_after", 1, 1000),
                ("max_restarts", 1, 5),
            ),
        )
        if "dropout" in table:
            p = number(f"{KIND}.dropout", table["dropout"])
            if not 0.05 <= p <= 0.95:
                raise ScenarioError(f"{KIND}.dropout", f"must be from 0.05 to 0.95, got {p:g}")
            v["dropout"] = p
        if "lr" in table:
            v["lr"] = rate(f"{KIND}.lr", table["lr"], 1)
        if "attempt_keys" in table:
            v["attempt_keys"] = flag(f"{KIND}.attempt_keys", table["attempt_keys"])
        spec = cls(**v)
        if spec.resume_epoch >= spec.epochs:
            raise ScenarioError(f"{KIND}.resume_epoch", "must be below epochs")
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KEYS}

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
