"""The engine's side of each kind of run: its folder's ``engine.py`` (torch, no Qt).

A kind whose run is a program of its own, not DDP training (the all-reduce by hand), gives
``PROGRAM(run, rank, scenario, outbox) -> steps``; the rank runs it inside the process group
the core set up, and reports the steps it completed.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from ddp_viz.model import registry

if TYPE_CHECKING:
    from ddp_viz.engine.outbox import Outbox
    from ddp_viz.model.scenario import Scenario

Program = Callable[[int, int, "Scenario", "Outbox"], int]

_PARTS: dict[str, ModuleType] = {}


def engine_parts() -> dict[str, ModuleType]:
    """Every kind folder's ``engine`` module, by kind folder (imported once)."""
    if not _PARTS:
        _PARTS.update(registry.load_parts("engine"))
    return _PARTS


def kind_program(scenario: Scenario) -> Program | None:
    """The program of the kind whose table ``scenario`` holds, if that kind owns the run."""
    parts = engine_parts()
    for kind in registry.kinds():
        if kind.table is not None and scenario.table(kind.table) is not None:
            program = getattr(parts.get(kind.id), "PROGRAM", None)
            if program is not None:
                return program
    return None
