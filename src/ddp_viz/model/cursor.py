"""A position on the stage: a step and one of its animation phases (pure)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

PHASES = ("shards", "local", "allreduce", "step")


@dataclass(frozen=True, order=True)
class Cursor:
    """A position on the stage: (step index, phase index)."""

    step: int = 0
    phase: int = 0

    @property
    def phase_name(self) -> str:
        return PHASES[self.phase]

    def next(self, available_steps: int) -> Cursor:
        if self.phase + 1 < len(PHASES):
            return Cursor(self.step, self.phase + 1)
        if self.step + 1 < available_steps:
            return Cursor(self.step + 1, 0)
        return self

    def prev(self) -> Cursor:
        if self.phase > 0:
            return Cursor(self.step, self.phase - 1)
        if self.step > 0:
            return Cursor(self.step - 1, len(PHASES) - 1)
        return self

    def is_last(self, available_steps: int) -> bool:
        return self.next(available_steps) == self


def walk(available_steps: int) -> Iterator[Cursor]:
    c = Cursor()
    while True:
        yield c
        if c.is_last(available_steps):
            return
        c = c.next(available_steps)


def shown(cursor: Cursor, progress: float, step: int, phase: str) -> bool:
    """Whether ``phase`` of ``step`` is on the stage: it has played to its end, or the stage is
    past it. Autoplay enters the next phase at progress 0.0 and never reports 1.0 on the phase
    it leaves, so being past the phase counts whatever the progress."""
    target = Cursor(step, PHASES.index(phase))
    return cursor > target or (cursor == target and progress >= 1.0)


def reached(cursor: Cursor, step: int, phase: str) -> bool:
    """Whether the stage has entered ``phase`` of ``step`` (or is past it): when a prediction
    about a value that phase shows is graded. A scene may draw the value from the phase's first
    frame (a table of the step's bytes), so the grade comes with it, never a phase later; and
    no scene may draw it before (tests/core/test_predictions_hidden.py)."""
    return cursor >= Cursor(step, PHASES.index(phase))


def steps_shown(cursor: Cursor, progress: float, phase: str) -> int:
    """How many steps have had ``phase`` shown: what a view may show of them, and no more."""
    return cursor.step + (1 if shown(cursor, progress, cursor.step, phase) else 0)
