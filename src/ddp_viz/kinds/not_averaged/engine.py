"""What DDP does not average, captured in a real rank: BatchNorm's buffers around each forward,
the reducer's error for a parameter that gets no gradient, the cost of
``find_unused_parameters``, and a checkpoint saved and loaded as scripts do.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile, record_function

from ddp_viz.engine.kind_parts import TrainingHooks
from ddp_viz.engine.models import build_model
from ddp_viz.engine.outbox import Outbox
from ddp_viz.engine.tensors import encode
from ddp_viz.engine.trainer import Trainer
from ddp_viz.kinds.not_averaged.events import BufferValues, Checkpoint, ReducerError, UnusedCost
from ddp_viz.model.event_base import Event
from ddp_viz.model.scenario import Scenario

# the first words of the reducer's error when a step starts before the last one's reduction
# finished (torch/csrc/distributed/c10d/reducer.cpp)
REDUCER_UNFINISHED = "Expected to have finished reduction in the prior iteration"
COST_ROUNDS, COST_WARMUP = 16, 4
COUNTED = 3  # warm-up steps run under the profiler, counting all-reduces: never timed


# --- buffers --------------------------------------------------------------------------------
class BufferTracker:
    """Copies the module's floating-point buffers as its forward begins (inside DDP's forward,
    after DDP has broadcast rank 0's buffers, if it does) and as it returns."""

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.before: dict[str, Any] = {}
        self.after: dict[str, Any] = {}
        module.register_forward_pre_hook(lambda _m, _args: self._copy(self.before))
        module.register_forward_hook(lambda _m, _args, _out: self._copy(self.after))

    def _copy(self, into: dict[str, Any]) -> None:
        into.clear()
        for name, b in self.module.named_buffers():
            if b.is_floating_point():
                into[name] = encode(b)


# --- unused parameters ----------------------------------------------------------------------
def is_reducer_error(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and REDUCER_UNFINISHED in str(exc)


def reducer_error(run: int, step: int, rank: int, exc: BaseException, module: nn.Module):  # type: ignore[no-untyped-def]
    """The event for DDP's error, naming the parameters behind the indices it lists."""
    text = str(exc).strip()
    names = [n for n, _ in module.named_parameters()]
    found = re.search(r"did not receive grad for rank \d+:\s*([\d ]+)", text)
    indices = [int(i) for i in found.group(1).split()] if found else []
    unused = [names[i] for i in indices if 0 <= i < len(names)]
    return ReducerError(run=run, step=step, rank=rank, error=text, unused=unused)


def gloo_allreduces(steps: list[Callable[[], None]]) -> list[list[list[Any]]]:
    """Run ``steps`` under one profiler session (one start and stop: kineto logs each); for
    each step, every all-reduce gloo ran in it, in order, as ``[dtype, elements]``: DDP's
    gradient buckets (the model's dtype) and, with ``find_unused_parameters``, the bitmap of
    which parameters were used (``int``, one element per parameter), which the reducer
    all-reduces itself, outside any comm hook. A bucket's all-reduce runs on gloo's thread; it
    belongs to the step whose span holds its start (backward waits for every bucket)."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for i, step in enumerate(steps):
            with record_function(f"ddp-viz:step:{i}"):
                step()
    events = list(prof.events())
    spans = {
        int(e.name.rsplit(":", 1)[1]): e.time_range
        for e in events
        if e.name.startswith("ddp-viz:step:")
    }
    out: list[list[list[Any]]] = [[] for _ in steps]
    for e in sorted(events, key=lambda e: e.time_range.start):
        if e.name != "gloo:all_reduce":
            continue
        i = next((i for i, t in spans.items() if t.start <= e.time_range.start <= t.end), None)
        if i is not None:
            shape = (e.input_shapes or [[]])[0]
            dtype = (getattr(e, "input_dtypes", None) or ["?"])[0]
            out[i].append([dtype, math.prod(shape)])
    return out


def _train_step(ddp: DDP, opt: torch.optim.Optimizer, loss: Callable[..., torch.Tensor], x, y):  # type: ignore[no-untyped-def]
    def step() -> None:
        opt.zero_grad()
        loss(ddp(x), y).backward()
        opt.step()

    return step


def time_unused_cost(
    run: int, rank: int, scenario: Scenario, x: torch.Tensor, y: torch.Tensor
) -> UnusedCost:
    """Per-step seconds with ``find_unused_parameters`` True and False, alternating, on two
    fresh copies of the run's model (the run's ``bucket_cap_mb``): with the flag as the run
    trains it (``aux`` unused); without it the model cannot train at all, so that copy runs
    ``aux`` too. The False side does slightly more arithmetic, so the difference is if
    anything understated. The first :data:`COUNTED` steps of each copy, warm-up that is not
    timed, run under the profiler and count the all-reduces gloo ran in each."""
    loss_fn = nn.MSELoss(reduction=scenario.train.loss_reduction)
    steps, times = {}, {True: [], False: []}
    for flag in (True, False):
        model = build_model(scenario)
        model.use_aux = not flag
        ddp = DDP(model, bucket_cap_mb=scenario.ddp.bucket_cap_mb, find_unused_parameters=flag)
        opt = torch.optim.SGD(ddp.parameters(), lr=scenario.lr)
        steps[flag] = _train_step(ddp, opt, loss_fn, x, y)
    counted = gloo_allreduces([steps[f] for _ in range(COUNTED) for f in (True, False)])
    for i in range(COUNTED, COST_ROUNDS + COST_WARMUP):
        for flag in (True, False) if i % 2 == 0 else (False, True):
            t0 = time.monotonic()
            steps[flag]()
            if i >= COST_WARMUP:
                times[flag].append(time.monotonic() - t0)
    return UnusedCost(
        run=run,
        rank=rank,
        with_flag=times[True],
        without_flag=times[False],
        allreduces_with=counted[0::2],
        allreduces_without=counted[1::2],
    )


# --- checkpoint -----------------------------------------------------------------------------
def _sha256(path: Path) -> tuple[str, int]:
    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), len(data)


def save_and_load(run: int, rank: int, module: nn.Module, folder: Path, outbox: Outbox) -> None:
    """Rank 0 saves the plain module's ``state_dict()`` (not DDP's, whose keys start with
    ``module.``); a barrier keeps every reader behind the writer; every rank loads it with
    ``map_location`` and reports what the load changed."""
    path = folder / "checkpoint.pt"
    # listing: checkpoint
    if rank == 0:
        torch.save(module.state_dict(), path)
        digest, size = _sha256(path)
        outbox.add(Checkpoint(run, 0, "saved", digest, size), now=True)
    dist.barrier()
    own = {k: v.clone() for k, v in module.state_dict().items()}
    digest, size = _sha256(path)
    state = torch.load(path, map_location="cpu", weights_only=True)
    module.load_state_dict(state)
    # end listing
    params = [n for n, _ in module.named_parameters()]
    same = all(torch.equal(state[n], own[n]) for n in params)
    replaced = [
        n
        for n, b in module.named_buffers()
        if b.is_floating_point() and not torch.equal(state[n], own[n])
    ]
    outbox.add(Checkpoint(run, rank, "loaded", digest, size, same, replaced), now=True)
    dist.barrier()  # rank 0's folder is removed after the run: every read is done first


# --- in the training loop -------------------------------------------------------------------
class NotAveragedHooks(TrainingHooks):
    """Every DDP training run: the buffers around each forward (a model with buffers), the
    reducer's error as the step's outcome, then the flag's cost and the checkpoint."""

    def built(self, trainer: Trainer) -> None:
        self.buffers = BufferTracker(trainer.model) if self.scenario.model.buffers() else None

    def skips(self) -> frozenset[str]:
        # a model without buffers has no buffer event to send: its steps pay nothing for this
        return frozenset({"step_events"}) if self.buffers is None else frozenset()

    def step_events(self, trainer: Trainer, step: int) -> list[Event]:
        if self.buffers is None:
            return []
        return [BufferValues(self.run, step, self.rank, self.buffers.before, self.buffers.after)]

    def on_forward_error(self, trainer: Trainer, step: int, exc: RuntimeError) -> bool:
        """A parameter with no gradient: DDP's own words end the loop."""
        if not is_reducer_error(exc):
            return False
        trainer.outbox.add(reducer_error(self.run, step, self.rank, exc, trainer.model), now=True)
        return True

    def finish(self, trainer: Trainer, completed: int) -> None:
        s = self.scenario
        if completed < trainer.my_steps:  # diverged, or DDP's reducer refused a step
            return
        if s.ddp.find_unused_parameters and s.model.unused:
            event = time_unused_cost(self.run, self.rank, s, *trainer.tensors(trainer.rows))
            trainer.outbox.add(event, now=True)
        if s.train.flag("checkpoint") and trainer.folder is not None:
            save_and_load(self.run, self.rank, trainer.model, trainer.folder, trainer.outbox)


HOOKS = NotAveragedHooks
