"""Ended runs' folders, removed again for a while: a rank's own children (torchrun's workers)
may still write there while they stop, and a file made during a removal keeps the folder."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

SWEEP_S = 30.0  # how long an ended run's folder is removed again if something wrote there


class Sweep:
    def __init__(self) -> None:
        self._until: dict[Path, float] = {}

    def remove(self, folder: Path) -> None:
        """Remove ``folder`` now, and again on each :meth:`tick` for ``SWEEP_S``."""
        shutil.rmtree(folder, ignore_errors=True)
        self._until[folder] = time.monotonic() + SWEEP_S

    def tick(self) -> None:
        now = time.monotonic()
        for folder, until in list(self._until.items()):
            if os.path.exists(folder):
                shutil.rmtree(folder, ignore_errors=True)
            if now > until:
                del self._until[folder]
