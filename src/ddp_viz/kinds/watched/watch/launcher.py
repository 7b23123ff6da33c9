"""How each rank's process ended, in the launcher's words (no torch imported here).

A rank killed by a signal (SIGKILL, the OOM killer) leaves no word of its own. torchrun's
launcher sees its exit status: it makes a ``ProcessFailure`` for every worker that did not
exit with 0 (``torch.distributed.elastic.multiprocessing.api``: ``_capture_process_failures``),
for the first failure and for the workers it then stops with SIGTERM. In a watched command,
``sitecustomize`` patches that class in the launcher's process so each one also appends a line
(pid, local rank, status, time) to the file ``DDP_VIZ_EXITS`` names; ``ddp-viz watch`` reads
the file once the command ended and turns its lines into
:class:`~ddp_viz.kinds.watched.events.WatchExit` events, matched to ranks by pid.

torchrun looks for failed workers, stops the rest with SIGTERM (``PContext.close``), then
looks again to log what it stopped (``SubprocessContext._poll``). So ``PContext.start`` and
``close`` append a line too: an exit seen after a ``start`` and before the next ``close`` is
one that made torchrun stop the others. A SIGTERM among those came from outside torchrun (a
scheduler's preemption, ``kill``): the cause, where a SIGTERM after is a consequence.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

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
            _append(path, {**line, "exitcode": int(self.exitcode), "at": time.time()})
        except Exception:  # never into the launcher
            return

    cls.__post_init__ = __post_init__
    cls._ddp_viz_patched = True


def patch_workers(module: ModuleType) -> None:
    """Wrap ``module.PContext``'s ``start`` and ``close`` (the launcher's process only)."""
    path = os.environ.get(EXITS_ENV)
    cls = getattr(module, "PContext", None)
    if not path or cls is None or getattr(cls, "_ddp_viz_patched", False):
        return
    for name in ("start", "close"):
        setattr(cls, name, _marking(getattr(cls, name), name, path))
    cls._ddp_viz_patched = True


def _marking(method: Callable[..., Any], name: str, path: str) -> Callable[..., Any]:
    def marked(self: object, *args: Any, **kwargs: Any) -> Any:
        _append(path, {name: time.time()})
        return method(self, *args, **kwargs)

    return marked


def _append(path: str, line: dict[str, Any]) -> None:
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
    except OSError:  # never into the launcher
        return


def read_exits(path: Path, ranks_by_pid: dict[int, int]) -> list[WatchExit]:
    """The launcher's lines as events, the first line per pid (a rank not connected: its
    local rank stands for its rank, as on one machine), each ``first`` when seen between a
    ``start`` and the next ``close`` (without those lines, none is)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    out: dict[int, WatchExit] = {}
    open_ = False  # the workers started and torchrun has not begun stopping them
    for raw in text.splitlines():
        try:
            d = json.loads(raw)
            if "start" in d or "close" in d:
                open_ = "start" in d
                continue
            pid, code = int(d["pid"]), int(d["exitcode"])
            rank = ranks_by_pid.get(pid, int(d["local_rank"]))
            at = float(d.get("at", 0.0))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if pid not in out:
            out[pid] = WatchExit(RUN, rank, pid, code, signal_name(code), at, first=open_)
    return list(out.values())
