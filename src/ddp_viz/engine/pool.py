"""A pool of warm rank processes, forked from a preloaded forkserver (or spawned).

The forkserver imports torch and everything DDP imports lazily once (:mod:`.warm`); each rank
is a fork of it, so N ranks pay the import about once instead of N times, and a rank that
finished a run waits for the next one with everything still loaded. Where there is no safe
fork (Windows, macOS; ``DDP_VIZ_START_METHOD=spawn``), each rank is a fresh interpreter that
imports :mod:`.warm` itself before it says it is ready: slower to start, as warm after that.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from ddp_viz import platform
from ddp_viz.model.protocol import WorkerStatus

# What the forkserver imports once before it forks a rank (a spawned rank imports them itself):
# the guard first, so a forkserver whose engine died during torch's import dies too.
PRELOAD = ("ddp_viz.engine.orphan_guard", "ddp_viz.engine.warm")
# The lowest priority: ranks are background compute beside the window. At 10 they still took
# a tenth of a core from the window whenever both wanted one, and two ranks in lockstep on two
# cores then both waited; at 19 a 500-step run in the window took 1.05-1.15x its headless time
# against 1.00-1.28x at 10 (ddp-viz bench --only window, alternating, 2026-12-01).
RANK_NICENESS = 19


def usable_cores() -> int:
    """The cores this process (and the ranks it forks) may run on; Linux knows the affinity."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 0


def worker_main(conn: Connection, slot: int, parent: int | None = None) -> None:
    """Entry point of a pooled rank process: wait for jobs, run them, repeat. ``parent``: the
    engine's pid, for a spawned rank (a forked one's parent is the forkserver)."""
    platform.die_with_parent(parent=parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the engine's to handle
    # Ranks are background compute: on a laptop's few cores the window must stay smooth.
    platform.lower_priority(RANK_NICENESS)
    if os.environ.get("DDP_VIZ_TEST_RANKS_FAIL_TO_START"):  # the reliability tests' fault
        print("[rank] failing to start on purpose (DDP_VIZ_TEST_RANKS_FAIL_TO_START)", flush=True)
        os._exit(3)
    if platform.start_method() is platform.StartMethod.SPAWN:
        for module in PRELOAD[1:]:  # no forkserver imported them for us
            importlib.import_module(module)
    from ddp_viz.engine.bare import run_bare
    from ddp_viz.engine.rank import run_rank

    conn.send({"ctl": "ready", "pid": os.getpid()})
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        op = msg.get("op")
        if op not in ("run", "bare"):
            return
        try:
            (run_rank if op == "run" else run_bare)(msg, conn.send)
        except BaseException as exc:  # report, then die: the pool replaces this process
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            with contextlib.suppress(Exception):
                conn.send({"ctl": "error", "reason": detail, "tb": traceback.format_exc()})
            os._exit(1)


@dataclass(eq=False)
class Worker:
    slot: int
    process: Any
    conn: Connection
    pid: int | None = None
    state: WorkerStatus = WorkerStatus.STARTING  # -> READY -> BUSY -> READY ... | EXITED
    run: int | None = None
    rank: int | None = None

    @property
    def alive(self) -> bool:
        return self.state != WorkerStatus.EXITED

    def kill(self) -> None:
        if self.state == WorkerStatus.EXITED:
            return
        with contextlib.suppress(Exception):
            self.process.kill()
        self.state = WorkerStatus.EXITED
        with contextlib.suppress(Exception):
            self.conn.close()

    def reap(self, timeout: float = 1.0) -> int | None:
        with contextlib.suppress(Exception):
            self.process.join(timeout)
        return self.process.exitcode


class Pool:
    """Owns the rank processes. Not thread-safe: the engine's main loop drives it."""

    def __init__(self) -> None:
        self._ctx = platform.rank_context(PRELOAD)
        self.workers: list[Worker] = []
        self._next_slot = 0

    # --- size --------------------------------------------------------------------------------
    def start_one(self) -> Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        slot = self._next_slot
        self._next_slot += 1
        spawned = platform.start_method() is platform.StartMethod.SPAWN
        process = self._ctx.Process(
            target=worker_main,
            args=(child, slot, os.getpid() if spawned else None),
            name=f"ddp-viz-rank-slot{slot}",
            daemon=True,
        )
        process.start()
        child.close()
        worker = Worker(slot=slot, process=process, conn=parent, pid=process.pid)
        self.workers.append(worker)
        return worker

    def alive(self) -> list[Worker]:
        return [w for w in self.workers if w.alive]

    def idle(self) -> list[Worker]:
        return [w for w in self.workers if w.state == WorkerStatus.READY]

    def grow_to(self, n: int) -> list[Worker]:
        started = []
        while len(self.alive()) < n:
            started.append(self.start_one())
        return started

    def shrink_to(self, n: int) -> list[Worker]:
        """Stop idle workers beyond ``n`` (never busy ones)."""
        stopped = []
        for worker in reversed(self.idle()):
            if len(self.alive()) <= n:
                break
            self.stop(worker)
            stopped.append(worker)
        return stopped

    def stop(self, worker: Worker) -> None:
        with contextlib.suppress(Exception):
            worker.conn.send({"op": "exit"})
        worker.kill()
        worker.reap(0.5)

    def forget_exited(self) -> None:
        self.workers = [w for w in self.workers if w.alive]

    def shutdown(self) -> None:
        for worker in self.workers:
            worker.kill()
        for worker in self.workers:
            worker.reap(1.0)
        self.workers = []

    def by_conn(self, conn: Any) -> Worker | None:
        return next((w for w in self.workers if w.conn is conn), None)

    def by_sentinel(self, sentinel: Any) -> Worker | None:
        return next((w for w in self.workers if w.alive and w.process.sentinel == sentinel), None)
