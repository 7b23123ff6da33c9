"""The long-lived engine process: commands on stdin, events on stdout, ranks in a warm pool.

One JSON command per stdin line (``run``, ``cancel``, ``warm``, ``shutdown``); one JSON event
per stdout line, written by this process only (ranks report through pipes). Logs go to stderr.
End of stdin means the front end is gone: the engine stops its ranks and exits.
"""

from __future__ import annotations

import contextlib
import multiprocessing.connection as mpc
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ddp_viz import __version__, platform
from ddp_viz.engine.exits import describe_exit
from ddp_viz.engine.pool import Pool, Worker, usable_cores
from ddp_viz.engine.sent_log import log_sent
from ddp_viz.engine.sweep import Sweep
from ddp_viz.model import protocol
from ddp_viz.model.scenario import Scenario, ScenarioError

MAX_START_FAILURES = 3  # rank processes that die before ready, in a row, before giving up
STRAGGLER_GRACE_S = 2.0  # after one rank ends a run abnormally, how long the others get
FLUSH_GRACE_S = 0.3  # after a rank fails: time for the others to report what they finished


def log(message: str) -> None:
    print(f"[engine {os.getpid()}] {message}", file=sys.stderr, flush=True)


@dataclass
class ActiveRun:
    run: int
    scenario: Scenario
    fault: dict[str, Any]
    ranks: list[Worker] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    store_dir: Path | None = None
    done: set[int] = field(default_factory=set)
    steps_completed: int = 0
    diverged: tuple[int, str] | None = None
    deadline: float | None = None
    failing: tuple[int | None, str] | None = None  # first failure: (rank, reason)
    failing_exited: bool = False  # the failure is a rank process that ended
    sent: int = 0  # event lines written for this run (see engine.sent_log)
    raised: set[int] = field(default_factory=set)  # ranks that reported an exception


class Engine:
    def __init__(self, out: TextIO, initial_pool: int = 2) -> None:
        self.out = out
        self.pool, self.sweep = Pool(), Sweep()  # the sweep: ended runs' folders, again
        self.active: ActiveRun | None = None
        self.pending: ActiveRun | None = None
        self.running = True
        self.initial_pool = initial_pool
        self._commands_rx, self._commands_tx = mpc.Pipe(duplex=False)
        self.start_failures = 0  # rank processes in a row that ended before they were ready

    # --- output: the only writer of stdout ---------------------------------------------------
    def emit(self, event: protocol.Event | dict[str, Any]) -> None:
        line = (
            protocol.encode(event) if isinstance(event, protocol.Event) else protocol.dumps(event)
        )
        self.out.write(line + "\n")

    def flush(self) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.out.flush()

    def _worker_state(self, w: Worker, detail: str = "") -> None:
        self.emit(protocol.WorkerState(slot=w.slot, pid=w.pid, state=w.state, detail=detail))

    def _read_stdin(self, stream: TextIO) -> None:
        for line in stream:
            if line.strip():
                self._commands_tx.send(line)
        self._commands_tx.send(None)  # EOF: the front end went away

    # --- main loop ---------------------------------------------------------------------------
    def serve(self, stdin: TextIO) -> int:
        threading.Thread(target=self._read_stdin, args=(stdin,), daemon=True).start()
        self.emit(protocol.EngineReady(pid=os.getpid(), version=__version__))
        self.flush()
        self._resize(self.initial_pool)
        try:
            while self.running:
                self._tick()
        finally:
            self._shutdown()
        return 0

    def _tick(self) -> None:
        waitables: list[Any] = [self._commands_rx]
        for w in self.pool.workers:
            if w.alive:
                waitables += [w.conn, w.process.sentinel]
        timeout = 0.5
        if self.active and self.active.deadline is not None:
            timeout = max(0.0, min(timeout, self.active.deadline - time.monotonic()))
        for obj in mpc.wait(waitables, timeout=timeout):
            if obj is self._commands_rx:
                self._on_command_line(self._commands_rx.recv())
            elif isinstance(obj, int):
                worker = self.pool.by_sentinel(obj)
                if worker is not None:
                    self._on_worker_exited(worker)
            else:
                worker = self.pool.by_conn(obj)
                if worker is not None and worker.alive:
                    self._drain(worker)
        run = self.active
        if run is not None and run.deadline is not None and time.monotonic() >= run.deadline:
            if run.failing is not None:
                rank, reason = run.failing
                self._end_run(protocol.RunFailed(run=run.run, reason=reason, rank=rank), True)
            else:
                self._fail(None, "ranks did not finish after the run ended on another rank")
        self._maybe_launch()
        self.sweep.tick()
        self.flush()

    def _drain(self, worker: Worker) -> None:
        while worker.alive:
            try:
                if not worker.conn.poll():
                    return
                msg = worker.conn.recv()
            except (EOFError, OSError):
                self._on_worker_exited(worker)
                return
            self._on_worker_message(worker, msg)

    # --- commands ----------------------------------------------------------------------------
    def _on_command_line(self, line: str | None) -> None:
        if line is None:
            log("stdin closed; shutting down")
            self.running = False
            return
        try:
            cmd = protocol.decode_command(line)
        except protocol.ProtocolError as exc:
            self.emit(protocol.CommandError(message=str(exc)))
            return
        match cmd:
            case protocol.ShutdownCommand():
                self.running = False
            case protocol.WarmCommand(world_size=n):
                if self.active is None and self.pending is None:
                    self._resize(max(1, min(n, 8)))
            case protocol.CancelCommand():
                self._on_cancel(cmd)
            case protocol.RunCommand():
                self._on_run(cmd)

    def _on_run(self, cmd: protocol.RunCommand) -> None:
        if self.active is not None or self.pending is not None:
            self.emit(protocol.CommandError(message="a run is already in progress"))
            return
        try:
            scenario = Scenario.from_mapping(cmd.scenario)
        except ScenarioError as exc:
            self.emit(protocol.CommandError(message=str(exc), field=exc.field))
            return
        self.pending = ActiveRun(run=cmd.run, scenario=scenario, fault=cmd.fault)
        self._resize(scenario.world_size)
        self._maybe_launch()

    def _on_cancel(self, cmd: protocol.CancelCommand) -> None:
        current = self.active or self.pending
        if current is None:
            return
        if cmd.run is not None and cmd.run != current.run:
            return
        self._end_run(protocol.RunCancelled(run=current.run), kill=True)

    # --- pool --------------------------------------------------------------------------------
    def _resize(self, n: int) -> None:
        for w in self.pool.shrink_to(n):
            self._worker_state(w, "pool shrank")
        self.pool.forget_exited()
        for w in self.pool.grow_to(n):
            self._worker_state(w)
        self.flush()

    def _maybe_launch(self) -> None:
        pending = self.pending
        if pending is None:
            return
        idle = self.pool.idle()
        if len(idle) < pending.scenario.world_size:
            return
        self.pending, self.active = None, pending
        pending.started = time.monotonic()
        pending.ranks = idle[: pending.scenario.world_size]
        for rank, w in enumerate(pending.ranks):
            w.state, w.run, w.rank = protocol.WorkerStatus.BUSY, pending.run, rank
        self.emit(
            protocol.RunStarted(
                run=pending.run,
                world_size=pending.scenario.world_size,
                steps=pending.scenario.steps,
                scenario=pending.scenario.to_dict(),
                # a shuffling sampler's shares are known only in the ranks: they report them
                shards=[]
                if pending.scenario.data.distributed or not pending.scenario.trains
                else pending.scenario.shards(),
                params=[
                    {"name": p.name, "shape": list(p.shape)}
                    for p in pending.scenario.model.parameters()
                ],
                cores=usable_cores(),
            )
        )
        pending.sent = 1
        # the rendezvous file lives in a folder only this user can read (mkdtemp: 0700)
        pending.store_dir = platform.run_folder(pending.run)
        for w in pending.ranks:
            self._send_job(w, pending)

    def _send_job(self, worker: Worker, run: ActiveRun) -> None:
        job = {
            "op": "run",
            "run": run.run,
            "rank": worker.rank,
            "scenario": run.scenario.to_dict(),
            "store": platform.store_file(run.store_dir) if run.store_dir else "",
            "fault": run.fault,
        }
        try:
            worker.conn.send(job)
        except (OSError, EOFError):
            self._on_worker_exited(worker)

    # --- worker messages ---------------------------------------------------------------------
    def _on_worker_message(self, worker: Worker, msg: dict[str, Any]) -> None:
        ctl = msg.get("ctl")
        if ctl == "ready":
            self.start_failures = 0
            worker.state = protocol.WorkerStatus.READY
            self._worker_state(worker)
            return
        run = self.active
        if run is None or worker.run != run.run:
            return  # late message of a run that already ended
        if ctl == "error" and worker.rank is not None:
            run.raised.add(worker.rank)  # it raised: its exit is no news (see _fail)
        if ctl is None:
            self.emit(msg)
            run.sent += 1
        elif ctl == "lines":  # events the rank already encoded, one step's worth at a time
            self.out.write(msg["text"])
            run.sent += msg["text"].count("\n")  # one line each, each ending in a newline
        elif run.failing is not None:
            if ctl == "done":  # finished everything before the failure: nothing more to wait for
                run.done.add(worker.rank if worker.rank is not None else -1)
                worker.state, worker.run, worker.rank = protocol.WorkerStatus.READY, None, None
            return
        elif ctl == "diverged":
            run.diverged = (int(msg["step"]), str(msg.get("what", "values")))
            run.deadline = run.deadline or time.monotonic() + STRAGGLER_GRACE_S
        elif ctl == "done":
            run.done.add(worker.rank if worker.rank is not None else -1)
            run.steps_completed = max(run.steps_completed, int(msg.get("steps", 0)))
            worker.state, worker.run, worker.rank = protocol.WorkerStatus.READY, None, None
            if len(run.done) == len(run.ranks):
                self._finish(run)
        elif ctl == "error":
            log(f"rank {worker.rank} raised:\n{msg.get('tb', '')}")
            self._fail(worker.rank, f"rank {worker.rank} raised {msg.get('reason')}", exited=False)

    def _on_worker_exited(self, worker: Worker) -> None:
        if not worker.alive:
            return
        # what it sent before it ended (an exception report) comes first
        with contextlib.suppress(EOFError, OSError):
            while worker.conn.poll():
                self._on_worker_message(worker, worker.conn.recv())
        was_busy_in = worker.run
        rank = worker.rank
        never_ready = worker.state == protocol.WorkerStatus.STARTING
        worker.kill()
        code = worker.reap(0.2)
        worker.state = protocol.WorkerStatus.EXITED
        cause = describe_exit(code)
        self._worker_state(worker, cause)
        log(f"worker slot {worker.slot} (pid {worker.pid}) {cause}")
        if self.active is not None and was_busy_in == self.active.run:
            self._fail(rank, f"rank {rank} (pid {worker.pid}) {cause}", exited=True)
        self.pool.forget_exited()
        if never_ready:
            self.start_failures += 1
            if self.start_failures >= MAX_START_FAILURES:
                self._give_up_starting(cause)
                return
        if self.running:
            self._refill()

    def _give_up_starting(self, cause: str) -> None:
        """Rank processes keep dying before they are ready (a broken install, no memory):
        stop forking new ones, fail the waiting run with the reason, and wait for commands;
        the next run or warm command tries again."""
        message = (
            f"rank processes could not start: {self.start_failures} in a row {cause} before "
            "they were ready (see the engine log for why)"
        )
        log(message)
        run = self.pending
        if run is not None:  # (no refill while start_failures is set)
            self._end_run(protocol.RunFailed(run=run.run, reason=message, rank=None), kill=True)
        else:
            self.emit(protocol.CommandError(message=message))
        self.start_failures = 0

    # --- ending runs -------------------------------------------------------------------------
    def _finish(self, run: ActiveRun) -> None:
        if run.diverged is not None:
            step, what = run.diverged
            self._end_run(
                protocol.RunFailed(
                    run=run.run,
                    reason=f"diverged at step {step + 1}: {what} became infinite or NaN "
                    f"(learning rate {run.scenario.lr:g} is too large for this data)",
                    rank=None,
                ),
                kill=False,
            )
            return
        self._end_run(
            protocol.RunFinished(
                run=run.run,
                steps_completed=run.steps_completed,
                elapsed_s=time.monotonic() - run.started,
            ),
            kill=False,
        )

    def _fail(self, rank: int | None, reason: str, exited: bool = False) -> None:
        """End the run as failed, after a short grace in which the surviving ranks' reports of
        the steps they completed still arrive (they are then stopped: the next collective
        would block them until gloo's timeout).

        The first cause is the one reported, with one exception: when a rank process ends,
        its peers' collectives fail at once ("Connection reset by peer"), and their error
        report can beat the engine's notice of the exit. A rank that ended abruptly (killed,
        or exited without raising) during the grace is the cause, not the peer that raised
        because of it."""
        run = self.active
        if run is None:
            return
        # a rank that raised and then ended is not news: its own error came first
        abrupt = exited and rank not in run.raised
        if run.failing is not None and (run.failing_exited or not abrupt):
            return
        first = run.failing is None
        run.failing, run.failing_exited = (rank, reason), exited
        if first:
            run.deadline = time.monotonic() + FLUSH_GRACE_S

    def _end_run(self, event: protocol.Event, kill: bool) -> None:
        run = self.active or self.pending
        self.active = self.pending = None
        if run is not None and run.store_dir:
            self.sweep.remove(run.store_dir)
        if run is not None and kill:
            # A rank blocked in a gloo collective cannot be asked to stop: end it and replace it.
            for w in run.ranks:
                if w.alive and w.state == protocol.WorkerStatus.BUSY:
                    w.kill()
                    self._worker_state(w, "stopped")
            for w in run.ranks:
                w.reap(0.5)
            self.pool.forget_exited()
        if run is not None:  # counted before it goes out: whoever reads it has the count
            log_sent(run.run, run.sent + 1)
        self.emit(event)
        self.flush()
        if self.running and kill and self.start_failures == 0:
            self._refill()

    def _refill(self) -> None:
        target = max(self.initial_pool, len(self.pool.alive()))
        if self.pending is not None:
            target = max(target, self.pending.scenario.world_size)
        for w in self.pool.grow_to(target):
            self._worker_state(w)

    def _shutdown(self) -> None:
        if self.active or self.pending:
            run = self.active or self.pending
            assert run is not None
            self._end_run(protocol.RunCancelled(run=run.run), kill=True)
        self.pool.shutdown()
        self.flush()
