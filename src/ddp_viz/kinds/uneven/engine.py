"""Uneven inputs on real ranks: the last rank's extra steps, Join, who is blocked in which
collective and for how long, and the stall the process group's timeout ends.

A rank blocked in gloo cannot report from its main thread, so a small thread beats every
quarter second while a collective has been outstanding for over half a second: an all-reduce
the comm hook launched and has not seen come back, or a barrier the script entered. The
beats are real waits, measured in the rank; the stage shows their latest value.

How the script finds the hang (``debug``): ``"detail"`` creates a process group with
``TORCH_DISTRIBUTED_DEBUG=DETAIL``, so c10d wraps gloo's backend in ``ProcessGroupWrapper``,
which checks every collective against the other ranks' before running it. In torch 2.13.0 on
CPU, ``DDP(model)`` on such a group dies with SIGSEGV (in DDP's construction logging, seen
here), so the checked group is made beside the default one, after it: DDP is built on the
default group, and the comm hook's all-reduces and the script's barrier use the checked one.
``"monitored_barrier"`` makes the script's barrier ``dist.monitored_barrier``, whose rank 0
names the ranks that did not arrive. Either error ends the run as the timeout's would.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.algorithms import Join

from ddp_viz.engine.kind_parts import TrainingHooks
from ddp_viz.engine.models import named_values
from ddp_viz.engine.reference import Oracle, loss_and_grads
from ddp_viz.engine.tensors import encode_all
from ddp_viz.engine.trainer import Trainer
from ddp_viz.kinds.uneven.events import (
    FinalParams,
    HangCheck,
    JoinShadow,
    OutOfData,
    Stalled,
    Waiting,
)
from ddp_viz.kinds.uneven.record import KIND
from ddp_viz.kinds.uneven.spec import MONITOR_S
from ddp_viz.model import protocol
from ddp_viz.model.scenario import Scenario

BEAT_S = 0.25
QUIET_S = 0.5  # a normal step's all-reduce takes milliseconds: no beats for those


@dataclass
class WaitState:
    """What the rank's main thread is blocked in, if the script says (a barrier); all-reduces
    are read from the comm hook's outstanding buckets."""

    what: str = ""
    since: float = 0.0
    outstanding: dict[int, float] = field(default_factory=dict)  # bucket -> launched
    completed: int = 0  # steps this rank finished

    # the capture hook's BucketObserver: an all-reduce in flight is what a stalled rank waits in
    def launched(self, index: int, at: float) -> None:
        self.outstanding[index] = at

    def returned(self, index: int) -> None:
        self.outstanding.pop(index, None)

    def enter(self, what: str) -> None:
        self.since = time.monotonic()  # before ``what``: a beat never sees a stale start
        self.what = what

    def leave(self) -> None:
        self.what = ""

    def current(self) -> tuple[str, float] | None:
        if self.what:
            return self.what, self.since
        pending = dict(self.outstanding)  # the hook's callbacks change it from gloo's thread
        if pending:
            return "all-reduce", min(pending.values())
        return None


class Heartbeat:
    """Beats ``Waiting`` events through ``send`` (which must be safe to call from here)."""

    def __init__(
        self, run: int, rank: int, state: WaitState, send: Callable[[dict[str, Any]], None]
    ):
        self.run, self.rank, self.state, self.send = run, rank, state, send
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="ddp-viz-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _beat(self) -> None:
        while not self._stop.wait(BEAT_S):
            waiting = self.state.current()
            now = time.monotonic()
            if waiting is None or now - waiting[1] < QUIET_S:
                continue
            event = Waiting(self.run, self.rank, waiting[0], waiting[1], now)
            self.send({"ctl": "lines", "text": protocol.encode(event) + "\n"})


def locked(send: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``send`` made safe to call from the heartbeat thread and the main thread at once."""
    lock = threading.Lock()

    def safe(message: dict[str, Any]) -> None:
        with lock:
            send(message)

    return safe


DEBUG_VAR = "TORCH_DISTRIBUTED_DEBUG"


@contextmanager
def debug_detail() -> Iterator[None]:
    """``TORCH_DISTRIBUTED_DEBUG=DETAIL`` for the process groups created inside. torch reads the
    variable once, when ``torch.distributed`` is imported (in a warm rank, long before this
    run), so it is set, read again, and afterwards put back as it was and read again: the
    next group, and the next run in this process, get the level they ask for."""
    before = os.environ.get(DEBUG_VAR)
    os.environ[DEBUG_VAR] = "DETAIL"
    dist.set_debug_level_from_env()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DEBUG_VAR, None)
        else:
            os.environ[DEBUG_VAR] = before
        dist.set_debug_level_from_env()


def checked_group() -> Any:
    """A process group of every rank created under DETAIL (all ranks call this together)."""
    with debug_detail():
        return dist.new_group(backend="gloo")


def hang_check(run: int, rank: int, debug: str, group: Any) -> HangCheck:
    """What the group the hook and the barrier use really is: the debug level it was made
    under and its backend's class."""
    level = "DETAIL" if group is not None else dist.get_debug_level().name
    backend = (group or dist.group.WORLD)._get_backend(torch.device("cpu"))
    return HangCheck(run, rank, debug, level, type(backend).__name__)


CALLBACK = "Got the following error when running the callback: RuntimeError: "


def report_stall(run: int, rank: int, waits: WaitState, exc: Exception, outbox: Any) -> None:
    """The wait the timeout ended, with gloo's words: without the Python stack after them,
    without the future callbacks' wrapping around them, and without an emoji no stage font
    draws. Whichever rank's timeout fires first closes gloo's connection, so its peer may
    report "Connection closed by peer" instead of a timeout of its own: both are gloo's."""
    waiting = waits.current() or ("a collective", time.monotonic())
    error = str(exc).split("\n\nAt:")[0].replace(CALLBACK, "").strip()
    error = "".join(c for c in error if ord(c) <= 0xFFFF).strip()
    outbox.add(Stalled(run, rank, waiting[0], time.monotonic() - waiting[1], error))
    outbox.control({"ctl": "done", "steps": waits.completed})


def shadow_steps(copies: list[tuple[int, dict, dict]]) -> list[tuple[dict, dict]]:
    """Under Join, after this rank ran out of batches, its hook runs for each step of the ranks
    still training (bucket 0 starts a step): the zeros it sent and the average it got back,
    merged per step by parameter name. The copies line up with the buckets because an uneven
    run records every step's values."""
    steps: list[tuple[dict, dict]] = []
    for index, local, averaged in copies:
        if index == 0 or not steps:
            steps.append(({}, {}))
        steps[-1][0].update(local)
        steps[-1][1].update(averaged)
    return steps


def report_shadows(
    run: int, rank: int, first: int, steps: list[tuple[dict, dict]], outbox: Any
) -> None:
    """Join's shadow all-reduces of a rank that ran out at step ``first``, one event a step."""
    for i, (local, averaged) in enumerate(steps):
        local_values = encode_all(local, False)
        averaged_values = encode_all(averaged)
        outbox.add(JoinShadow(run, first + i, rank, local_values, averaged_values))
    outbox.flush()


def one_process_run(oracle: Oracle, scenario: Scenario) -> dict[str, torch.Tensor]:
    """Uneven inputs under Join, in one float64 process from the initial parameters: each
    step adds the gradients of the ranks that still have a batch and divides by the world
    size the run started with (Join's ``divide_by_initial_world_size=True``, the default), as
    DDP does with the finished ranks' zeros."""
    model = copy.deepcopy(oracle.start)
    world, spec = scenario.world_size, scenario.table(KIND)
    shards = scenario.shards()
    for step in range(spec.steps):
        ranks = [r for r in range(world) if step < spec.steps_of(r, world)]
        grads = [loss_and_grads(model, *oracle.rows(shards[r]), oracle.reduction)[1] for r in ranks]
        with torch.no_grad():
            for name, p in model.named_parameters():
                p -= scenario.lr * sum(g[name] for g in grads) / world
    return {n: p.detach() for n, p in model.named_parameters()}


class UnevenHooks(TrainingHooks):
    """The last rank trains more steps; a heartbeat says who waits in what; the loop runs in
    ``Join`` when the table says so; after it, the script's barrier and every rank's final
    parameters. A stall the process group's timeout ends is the lesson's outcome."""

    flush_every_step = True  # a stall never hides the step before it

    def __init__(self, run: int, rank: int, scenario: Scenario) -> None:
        super().__init__(run, rank, scenario)
        self.spec = scenario.table(KIND)
        # a short timeout of its own, so the stall ends while the learner watches
        self.timeout = timedelta(seconds=self.spec.timeout_s)
        self.state = WaitState()
        self.group: Any = None  # the DETAIL-checked group, when ``debug = "detail"``

    def send(self, send: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        return locked(send)  # the heartbeat thread sends too

    def bucket_observer(self) -> WaitState:
        return self.state

    def around_run(self, send: Callable[[dict[str, Any]], None]) -> Heartbeat:
        # the group DETAIL checks: made here, after the default group, before DDP
        self.group = checked_group() if self.spec.debug == "detail" else None
        return Heartbeat(self.run, self.rank, self.state, send)

    def on_error(self, exc: RuntimeError, outbox: Any) -> bool:
        if self.state.current() is None:  # not blocked in a collective: a real error
            return False
        report_stall(self.run, self.rank, self.state, exc, outbox)
        return True

    def steps(self, planned: int) -> tuple[int, int]:
        return self.spec.steps_of(self.rank, self.scenario.world_size), self.spec.batches

    def around_loop(self, trainer: Trainer) -> Any:
        trainer.capture.process_group = self.group  # None: the default group
        check = hang_check(self.run, self.rank, self.spec.debug, self.group)
        trainer.outbox.add(check, now=True)
        return Join([trainer.ddp]) if self.spec.join else nullcontext()

    def after_step(self, trainer: Trainer, completed: int) -> None:
        self.state.completed = completed
        trainer.capture.reset()  # what the hook sees next is Join's shadowing

    def loop_ended(self, trainer: Trainer, completed: int) -> None:
        trainer.outbox.add(OutOfData(self.run, self.rank, completed, self.spec.join), now=True)

    def finish(self, trainer: Trainer, completed: int) -> None:
        outbox = trainer.outbox
        if self.spec.join:
            shadows = shadow_steps(trainer.capture.copies())
            report_shadows(self.run, self.rank, completed, shadows, outbox)
        # the script's next collective (a barrier before saving): under Join every rank gets
        # here; without, the ranks still training never do
        # listing: uneven-barrier
        if self.spec.debug == "monitored_barrier":  # rank 0 names who does not arrive
            self.state.enter("monitored_barrier")
            dist.monitored_barrier(timeout=timedelta(seconds=MONITOR_S))
        else:
            self.state.enter("barrier")
            dist.barrier(group=self.group)
        # end listing
        self.state.leave()
        solo = None
        if trainer.oracle is not None and self.spec.join:
            solo = encode_all(one_process_run(trainer.oracle, self.scenario))
        params = named_values(trainer.model)
        outbox.add(FinalParams(self.run, self.rank, params, solo), now=True)


HOOKS = UnevenHooks
