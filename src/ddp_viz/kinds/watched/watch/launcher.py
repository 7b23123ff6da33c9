"""How each rank's process ended, in the launcher's words (no torch imported here).

A rank killed by a signal (SIGKILL, the OOM killer) leaves no word of its own. torchrun's
launcher sees its exit status: it makes a ``ProcessFailure`` for every worker that did not
exit with 0 (``torch.distributed.elastic.multiprocessing.api``: ``_capture_process_failures``),
for the first failure and for the workers it then stops with SIGTERM. In a watched command,
``sitecustomize`` patches that class in the launcher's process so each one also appends a line
(pid, local rank, status, time) to the file ``DDP_VIZ_EXITS`` names; ``ddp-viz watch`` reads
the file once the command ended and turns its lines into
:class:`~ddp_viz.kinds.watched.events.WatchExit` events, matched to ranks by pid.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from types import ModuleType

from ddp_viz.kinds.watched.events import WatchExit

EXITS_ENV = "DDP_VIZ_EXITS"
TARGET = "torch.distributed.elastic.multiprocessing.errors"
RUN = 1


def signal_name(exitcode: int) -> str:
    """``SIGKILL`` for -9 (a negative status is the signal that ended the process)."""
    if exitcode >= 0:
        return ""
    try:
        return signal.Signals(-exitcode).name
    except ValueError:
        return f"signal {-exitcode}"


def patch(module: ModuleType) -> None:
    """Wrap ``module.ProcessFailure.__post_init__`` (the launcher's process only)."""
    path = os.environ.get(EXITS_ENV)
    cls = getattr(module, "ProcessFailure", None)
    if not path or cls is None or getattr(cls, "_ddp_viz_patched", False):
        return
    init = cls.__post_init__

    def __post_init__(self) -> None:  # type: ignore[no-untyped-def]
        init(self)
        try:
            line = {"pid": int(self.pid), "local_rank": int(self.local_rank)}
            line.update(exitcode=int(self.exitcode), at=time.time())
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        except Exception:  # never into the launcher
            return

    cls.__post_init__ = __post_init__
    cls._ddp_viz_patched = True


def read_exits(path: Path, ranks_by_pid: dict[int, int]) -> list[WatchExit]:
    """The launcher's lines as events, the first line per pid (a rank not connected: its
    local rank stands for its rank, as on one machine)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    out: dict[int, WatchExit] = {}
    for raw in text.splitlines():
        try:
            d = json.loads(raw)
            pid, code = int(d["pid"]), int(d["exitcode"])
            rank = ranks_by_pid.get(pid, int(d["local_rank"]))
            at = float(d.get("at", 0.0))
        except (ValueError, KeyError, TypeError):
            continue
        if pid not in out:
            out[pid] = WatchExit(RUN, rank, pid, code, signal_name(code), at)
    return list(out.values())
