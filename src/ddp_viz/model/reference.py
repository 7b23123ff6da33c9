"""Which steps get the single-process reference (the oracle) and which carry tensor values,
and how to say so.

The reference costs rank 0 one float64 forward and backward per shard plus one over the full
batch: more than a whole DDP step of a small model. Lessons run tens of steps and get it at
every step; a long run gets it at every step early on and then at regular steps, so watching
500 steps costs little more than training them. Which steps have it is fixed by the step
number alone, so every run of a scenario has it at the same steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddp_viz.model import registry

EVERY_STEP_BELOW = 20
THEN_EVERY = 100
# Tensor values (local and averaged gradients, parameters) the same way, ten times as often.
# Copying and summarising them is most of what recording a step costs a model of any size
# (the buckets lesson's MLP: about 2 ms of a 5 ms step); the loss, the buckets and the timings
# still come at every step. It divides THEN_EVERY, so that every reference step has the values
# it is checked against.
VALUES_EVERY = 10


def reference_due(step: int) -> bool:
    """Whether rank 0 computes the reference going into ``step`` (0-based)."""
    return step < EVERY_STEP_BELOW or (step + 1) % THEN_EVERY == 0


def reference_policy() -> str:
    """One sentence for a view to show where a step has no reference."""
    return (
        f"The full-batch reference is computed for steps 1–{EVERY_STEP_BELOW} and then for every "
        f"{THEN_EVERY}th step ({THEN_EVERY}, {2 * THEN_EVERY}, …)."
    )


def values_due(step: int, steps: int | None = None) -> bool:
    """Whether the ranks send their tensor values for ``step`` (0-based) of a run of ``steps``:
    the last step always, so a finished run ends on its parameters."""
    return step < EVERY_STEP_BELOW or (step + 1) % VALUES_EVERY == 0 or step + 1 == steps


def values_at_every_step(scenario: Mapping[str, Any]) -> bool:
    """Runs that record every step's values whatever their length (the engine's rule, read
    from a run's scenario): a kind of run that says so (``RunKind.values_every_step``), whose
    lessons are about what happens inside each step."""
    return any(k.values_every_step and k.owns(scenario) for k in registry.kinds())


def values_policy() -> str:
    """One sentence for a view to show at a step without values."""
    return (
        f"Gradients and parameters are recorded for steps 1–{EVERY_STEP_BELOW}, every "
        f"{VALUES_EVERY}th step and the last; the loss, buckets and timings for every step."
    )


def nearest_reference_step(step: int) -> int:
    """The closest earlier step (0-based) that has a reference."""
    if reference_due(step):
        return step
    return max(step - (step + 1) % THEN_EVERY, EVERY_STEP_BELOW - 1)
