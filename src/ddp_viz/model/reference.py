"""Which steps get the single-process reference (the oracle), and how to say so.

The reference costs rank 0 one float64 forward and backward per shard plus one over the full
batch: more than a whole DDP step of a small model. Lessons run tens of steps and get it at
every step; a long run gets it at every step early on and then at regular steps, so watching
500 steps costs little more than training them. Which steps have it is fixed by the step
number alone, so every run of a scenario has it at the same steps.
"""

from __future__ import annotations

EVERY_STEP_BELOW = 20
THEN_EVERY = 100


def reference_due(step: int) -> bool:
    """Whether rank 0 computes the reference going into ``step`` (0-based)."""
    return step < EVERY_STEP_BELOW or (step + 1) % THEN_EVERY == 0


def reference_policy() -> str:
    """One sentence for a view to show where a step has no reference."""
    return (
        f"The full-batch reference is computed for steps 1–{EVERY_STEP_BELOW} and then for every "
        f"{THEN_EVERY}th step ({THEN_EVERY}, {2 * THEN_EVERY}, …)."
    )


def nearest_reference_step(step: int) -> int:
    """The closest earlier step (0-based) that has a reference."""
    if reference_due(step):
        return step
    return max(step - (step + 1) % THEN_EVERY, EVERY_STEP_BELOW - 1)
