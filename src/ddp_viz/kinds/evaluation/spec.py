"""Evaluating and logging under DDP (``[evaluation]``): the scenario table. Pure model layer.

The run trains a small classifier with DDP for a few steps (a BatchNorm layer and dropout in
it), then evaluates ``eval_rows`` held-out rows that a ``DistributedSampler`` shares out
among the ranks, four ways; then rank 0 alone evaluates through the DDP wrapper while the
others wait at a barrier (``hang``), on a process group whose timeout is ``timeout_s``; then
rank 0 alone evaluates through ``model.module``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import flag, number, rate, wholes

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario

KIND = "evaluation"
KEYS = (
    "eval_rows",
    "train_steps",
    "batch",
    "hidden",
    "dropout",
    "lr",
    "seed",
    "shuffle",
    "hang",
    "timeout_s",
)
FEATURES = 4  # inputs of every row
CLASSES = 3  # the classes the model tells apart
TRAIN_ROWS = 512  # the training rows the ranks' sampler shares out


@dataclass(frozen=True)
class EvalSpec:
    """``train_steps`` DDP steps of ``batch`` rows a rank on a ``hidden``-wide classifier with
    dropout ``dropout``; ``eval_rows`` held-out rows shared by ``DistributedSampler(shuffle=
    shuffle, seed=seed)``; ``hang``: rank 0 then evaluates alone through the wrapper, on a
    process group whose timeout (``timeout_s``) ends the wait."""

    eval_rows: int = 25
    train_steps: int = 3
    batch: int = 8
    hidden: int = 16
    dropout: float = 0.5
    lr: float = 0.5
    seed: int = 0
    shuffle: bool = False
    hang: bool = True
    timeout_s: float = 3.0

    trains: ClassVar[bool] = False  # the program trains its own model, not the core's

    @classmethod
    def from_mapping(cls, data: Any) -> EvalSpec:
        table = spec_table(data, KIND, KEYS)
        v: dict[str, Any] = wholes(
            table,
            KIND,
            (
                ("eval_rows", 2, 500),
                ("train_steps", 1, 50),
                ("batch", 1, 64),
                ("hidden", 2, 64),
                ("seed", 0, 2**31 - 1),
            ),
        )
        if "dropout" in table:
            p = number(f"{KIND}.dropout", table["dropout"])
            if not 0.05 <= p <= 0.95:
                raise ScenarioError(f"{KIND}.dropout", f"must be from 0.05 to 0.95, got {p:g}")
            v["dropout"] = p
        if "lr" in table:
            v["lr"] = rate(f"{KIND}.lr", table["lr"], 10)
        if "timeout_s" in table:
            t = number(f"{KIND}.timeout_s", table["timeout_s"])
            if not 1 <= t <= 30:
                raise ScenarioError(f"{KIND}.timeout_s", f"must be 1 to 30 seconds, got {t:g}")
            v["timeout_s"] = t
        for key in ("shuffle", "hang"):
            if key in table:
                v[key] = flag(f"{KIND}.{key}", table[key])
        return cls(**v)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KEYS}

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
