"""The plots show no more of a run than the stage has shown: held to its cursor."""

from __future__ import annotations

import bisect
import math
from typing import Any

from ddp_viz.model.cursor import Cursor, steps_shown

ALL = (math.inf, math.inf)


class HoldMixin:
    """Keeps ``_hold``: the last step (x) whose loss, and whose parameters, the stage has
    shown. Curves are cut there when pushed; ``_push`` is the plots' own."""

    _hold: tuple[float, float] = ALL
    # a kind's own curves (plots.kind_curves), which say from which phase a step's first
    # curves show (None: the lessons' loss, from the local phase)
    _own: Any = None

    def hold_to(self, cursor: Cursor | None, progress: float = 1.0, later: bool = False) -> None:
        """Hold the curves to the stage. A step's loss appears once its backward phase has
        been shown (a watched step's wait, once its all-reduce has), its parameters once its
        optimizer step has. None shows every complete step (following a streaming run, where
        the stage shows the newest one). ``later``: a streaming run's own refreshes push the
        curves, one plot a turn, rather than all three plots now in the stage's turn."""
        if cursor is None:
            hold = ALL
        else:
            first = self._own.HOLD_FROM if self._own is not None else "local"
            hold = (steps_shown(cursor, progress, first), steps_shown(cursor, progress, "step"))
        if hold == self._hold:
            return
        self._hold = hold
        if getattr(self, "record", None) is not None and getattr(self, "_curves", None):
            if later:
                self._push_later()  # type: ignore[attr-defined]
                return
            for group in ("loss", "param", "surface"):
                self._push(group)  # type: ignore[attr-defined]

    def _held(self, name: str, xs: list[float]) -> int:
        """How many of a curve's points (x ascending) the stage has shown."""
        last = self._hold[0] if name.startswith(("loss", "full")) else self._hold[1]
        return bisect.bisect_right(xs, last)
