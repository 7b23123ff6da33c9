"""Evaluating and logging under DDP (``[evaluation]``): the scenario table. Pure model layer.

The run trains a small classifier with DDP for a few steps (a BatchNorm layer and dropout in
it), then evaluates ``eval_rows`` held-out rows that a ``DistributedSampler`` shares out
among the ranks, four ways; then rank 0 alone evaluates through the DDP wrapper while the
others wait at a barrier (``hang``), on a process group whose timeout is ``timeout_s``; then
rank 0 alone evaluates through ``model.module``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.plain_table import PlainTable, knob

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario

KIND = "evaluation"
FEATURES = 4  # inputs of every row
CLASSES = 3  # the classes the model tells apart
TRAIN_ROWS = 512  # the training rows the ranks' sampler shares out


@dataclass(frozen=True)
class EvalSpec(PlainTable):
    """``train_steps`` DDP steps of ``batch`` rows a rank on a ``hidden``-wide classifier with
    dropout ``dropout``; ``eval_rows`` held-out rows shared by ``DistributedSampler(shuffle=
    shuffle, seed=seed)``; ``hang``: rank 0 then evaluates alone through the wrapper, on a
    process group whose timeout (``timeout_s``) ends the wait."""

    eval_rows: int = knob(25, low=2, high=500)
    train_steps: int = knob(3, low=1, high=50)
    batch: int = knob(8, low=1, high=64)
    hidden: int = knob(16, low=2, high=64)
    dropout: float = knob(0.5, low=0.05, high=0.95)
    lr: float = knob(0.5, rate=True, high=10)
    seed: int = knob(0, low=0, high=2**31 - 1)
    shuffle: bool = knob(False)
    hang: bool = knob(True)
    timeout_s: float = knob(3.0, low=1, high=30, unit="seconds")

    TABLE: ClassVar[str] = KIND
    trains: ClassVar[bool] = False  # the program trains its own model, not the core's

    def fixed_steps(self, world: int) -> int:
        """One step: the stage's four phases are the lesson's four parts."""
        return 1

    def check_scenario(self, s: Scenario) -> None:
        if not 2 <= s.world_size <= 8:
            raise ScenarioError("world_size", "evaluating under DDP needs 2 to 8 ranks")
        if s.world_size > self.eval_rows:
            raise ScenarioError(
                f"{KIND}.eval_rows",
                f"{s.world_size} ranks need at least {s.world_size} held-out rows",
            )
        if s.steps != 1:
            raise ScenarioError("steps", f"[{KIND}] train_steps sets the training; leave steps out")


def padded_total(rows: int, world: int) -> int:
    """How many rows ``DistributedSampler(drop_last=False)`` hands out in all: every rank gets
    ``ceil(rows / world)``."""
    return -(-rows // world) * world
