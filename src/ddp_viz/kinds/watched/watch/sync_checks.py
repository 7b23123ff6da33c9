"""Inside a watched rank: gradients that DDP never averaged, though the script trained.

- **A forward around DDP.** A gradient that reaches DDP's parameters before DDP's first forward
  on this rank came from a forward that went around it (``model.module(x)``, or the model it
  wrapped): DDP prepares its reducer for the backward in its own forward, and averages nothing
  without it. Said once, with the script's line of the backward.
- **``no_sync()`` left on.** A backward after a forward run inside ``model.no_sync()`` is not
  all-reduced (that is what it is for: all but the last micro-step of an accumulation). A rank
  that ran such backwards and never one all-reduced says so at its end.

Each costs an attribute read or two per gradient and per forward.
"""

from __future__ import annotations

from typing import Any

import torch

from ddp_viz.kinds.watched.events import WatchAround, WatchNeverSynced
from ddp_viz.kinds.watched.watch.calls import call_site
from ddp_viz.model import protocol

RUN = 1


class SyncChecks:
    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.forwards = 0  # DDP's forwards so far
        self.around = False  # a gradient came with no DDP forward before it (said once)
        self.unsynced = 0  # backwards after a forward inside no_sync()
        self.site = ""  # the first such forward's line
        self._unsynced_now = False  # this step's forward ran inside no_sync()
        self._counted = True

    def forward(self, ddp: Any) -> None:
        """DDP's forward begins (its pre-hook, the script's thread)."""
        self.forwards += 1
        sync = getattr(ddp, "require_backward_grad_sync", True)
        self._unsynced_now = not sync and torch.is_grad_enabled()
        self._counted = False
        if self._unsynced_now and not self.site:
            self.site = call_site(1)

    def grad(self) -> str | None:
        """A parameter's gradient was accumulated: the line to send, if it says something."""
        if not self.forwards:
            if self.around:
                return None
            self.around = True
            return protocol.encode(WatchAround(RUN, self.rank, call_site(1)))
        if self._unsynced_now and not self._counted:
            self._counted = True
            self.unsynced += 1
        return None

    def last(self, synced: int) -> str | None:
        """At the rank's end, after ``synced`` steps all-reduced: its backwards, if every one of
        them ran after a forward inside no_sync()."""
        if synced or not self.unsynced:
            return None
        return protocol.encode(WatchNeverSynced(RUN, self.rank, self.unsynced, self.site))
