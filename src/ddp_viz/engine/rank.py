"""What one rank does in one run: gloo process group, DDP, and the capture hook.

The rank's local gradient and the averaged gradient are read *inside* DDP's backward: a comm
hook copies each bucket, does what PyTorch's Python ``allreduce_hook`` does (divide by the world
size, ``all_reduce``) and reads the result from that all-reduce's future. It is the step's only
all-reduce. A long run copies and sends the tensors at some steps only (``values_due``); its
loss, buckets and timings at every step.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms import Join
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.engine.accumulate import micro_rows, run_micro_batches, take
from ddp_viz.engine.capture import Capture, _hook
from ddp_viz.engine.data import first_epoch_rows, rank_batches
from ddp_viz.engine.kind_parts import kind_program
from ddp_viz.engine.models import build_model, named_values, torch_dtype
from ddp_viz.engine.outbox import Outbox
from ddp_viz.engine.reference import Oracle
from ddp_viz.engine.state import (
    BufferTracker,
    is_reducer_error,
    launch_event,
    reducer_error,
    save_and_load,
    time_unused_cost,
    torchrun_env,
)
from ddp_viz.engine.tensors import encode_all
from ddp_viz.engine.uneven import Heartbeat, WaitState, locked, report_shadows, report_stall
from ddp_viz.model import protocol
from ddp_viz.model.reference import reference_due, values_at_every_step, values_due
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.state_events import BufferValues
from ddp_viz.model.uneven_events import FinalParams, OutOfData

Send = Callable[[dict[str, Any]], None]
PG_TIMEOUT = timedelta(seconds=60)


class RankFault(RuntimeError):
    """An injected failure, used by the reliability tests."""


def _params_finite(model: nn.Module) -> bool:
    """Every parameter finite, at a step that encoded none: one sum per tensor (a NaN or an
    infinity anywhere makes it non-finite), about 60 µs for the buckets MLP where
    ``torch.isfinite`` per tensor took 500."""
    with torch.no_grad():
        return math.isfinite(float(sum(p.sum() for p in model.parameters())))


def _finite(encoded: dict[str, Any]) -> bool:
    """From the events' form, with no second pass over the tensors: a list's values, or a
    summary's float64 norm (infinite or NaN exactly when some value is)."""
    for value in encoded.values():
        if isinstance(value, dict):
            if not math.isfinite(value["norm"]):
                return False
        elif not all(math.isfinite(v) for v in value):
            return False
    return True


@dataclass
class _Values:
    local: dict[str, Any]
    averaged: dict[str, Any]
    params: dict[str, Any]
    vs_full: dict[str, float]


def _values(
    model: nn.Module,
    capture: Capture,
    full: dict[str, torch.Tensor],
) -> _Values:
    """A step's tensors in the events' form: the local gradients, DDP's average (and, on rank 0
    at a reference step, its largest difference from the full batch) and the parameters."""
    averaged = capture.averaged
    # a bucket whose all-reduce never launched (a parameter with no gradient holds it back):
    # its gradients stay the rank's own, in .grad
    local = capture.local
    if len(local) < len(capture.names):  # rare: only then look at .grad
        held = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
        local = {**held, **local}
    # rank 0 compares every value of DDP's average with the reference, so the check stays
    # exact when the events carry summaries of big tensors
    vs_full = {
        n: float((averaged[n].double() - full[n]).abs().max()) for n in full if n in averaged
    }
    return _Values(
        # local gradients differ by design: no digest to compare
        local=encode_all(local, False),
        averaged=encode_all(averaged),
        params=named_values(model),
        vs_full=vs_full,
    )


def run_rank(job: dict[str, Any], send: Send) -> None:
    """Train ``job["scenario"]`` as rank ``job["rank"]``; report through ``send``.

    Sends protocol events as dicts plus control messages ``{"ctl": ...}`` for the launcher:
    ``diverged`` and ``done``.
    """
    scenario = Scenario.from_mapping(job["scenario"])
    run, rank, world = int(job["run"]), int(job["rank"]), scenario.world_size
    fault = job.get("fault") or {}
    rows = first_epoch_rows(scenario, rank) if scenario.trains else []
    uneven = scenario.uneven
    if uneven is not None:  # a heartbeat thread sends too
        send = locked(send)
    outbox = Outbox(send)
    outbox.add(protocol.RankStarted(run=run, rank=rank, pid=os.getpid(), rows=rows), now=True)

    # A FileStore in a private per-run folder: no store port to choose, relay or lose, and no
    # TCP connect to the store (TCPStore clients here stalled for 5 s in ~4% of runs). gloo's
    # own connections between ranks bind free loopback ports chosen by the kernel.
    store = dist.FileStore(str(job["store"]), world)
    # uneven inputs: a short timeout of their own, so the stall ends while the learner watches
    timeout = timedelta(seconds=uneven.timeout_s) if uneven is not None else PG_TIMEOUT
    with ExitStack() as launched:
        if scenario.launch.init_method == "env":  # as torchrun starts a script
            env = launched.enter_context(torchrun_env(rank, world, store))
            dist.init_process_group("gloo", init_method="env://", timeout=timeout)
            outbox.add(launch_event(run, rank, "env", env), now=True)
        else:
            dist.init_process_group(
                "gloo", store=store, rank=rank, world_size=world, timeout=timeout
            )
        _run(run, rank, scenario, fault, outbox, Path(job["store"]).parent, send)
    del store


def _run(
    run: int,
    rank: int,
    scenario: Scenario,
    fault: dict,
    outbox: Outbox,
    folder: Path,
    send: Send,
) -> None:
    uneven = scenario.uneven
    try:
        try:
            program = kind_program(scenario)
            if program is not None:  # a kind of run that owns the whole program
                steps = program(run, rank, scenario, outbox)
                outbox.control({"ctl": "done", "steps": steps})
            elif uneven is not None:
                waits = WaitState()
                with Heartbeat(run, rank, waits, send):
                    try:
                        _train(run, rank, scenario, fault, outbox, waits)
                    except RankFault:
                        raise
                    except RuntimeError as exc:  # gloo's timeout: the lesson's outcome
                        if waits.current() is None:  # not blocked in a collective: a real error
                            raise
                        report_stall(run, rank, waits, exc, outbox)
            else:
                _train(run, rank, scenario, fault, outbox, folder=folder)
        finally:
            outbox.flush()  # what happened before an error reaches the window
    finally:
        dist.destroy_process_group()


def _train(
    run: int,
    rank: int,
    scenario: Scenario,
    fault: dict,
    outbox: Outbox,
    waits: WaitState | None = None,
    folder: Path | None = None,
) -> None:
    model = build_model(scenario)
    oracle = Oracle(scenario, model) if rank == 0 else None
    # broadcasts rank 0's parameters (and buffers) to every rank
    ddp = DDP(
        model,
        bucket_cap_mb=scenario.ddp.bucket_cap_mb,
        forward_sync_buffers=scenario.ddp.forward_sync_buffers,
        find_unused_parameters=scenario.ddp.find_unused_parameters,
    )
    buffers = BufferTracker(model) if scenario.model.buffers() else None
    outbox.add(protocol.InitialParams(run, rank, named_values(model)), now=True)
    capture = Capture(names={id(p): n for n, p in model.named_parameters()}, waits=waits)
    ddp.register_comm_hook(capture, _hook)
    for name, p in model.named_parameters():
        # fires when autograd has accumulated this parameter's gradient (before DDP's reducer
        # copies it into its bucket): the order the gradients became ready in
        p.register_post_accumulate_grad_hook(lambda _p, n=name: capture.on_grad_ready(n))
    optimizer = torch.optim.SGD(ddp.parameters(), lr=scenario.lr)
    loss_fn = nn.MSELoss(reduction=scenario.train.loss_reduction)
    dtype = torch_dtype(scenario)
    mine = rank_batches(scenario, rank)
    # rank 0's reference needs every rank's rows: the samplers are deterministic, so it runs
    # one for each rank itself, in step with the ranks, without asking them
    every = [rank_batches(scenario, r) for r in range(scenario.world_size)] if oracle else []
    cached: tuple[list[int], torch.Tensor, torch.Tensor] | None = None

    def tensors(rows: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        nonlocal cached
        if cached is None or cached[0] != rows:
            x = torch.tensor([scenario.x[i] for i in rows], dtype=dtype).unsqueeze(1)
            y = torch.tensor([scenario.y[i] for i in rows], dtype=dtype).unsqueeze(1)
            cached = (rows, x, y)
        return cached[1], cached[2]

    k = scenario.train.accumulate
    # micro-batch by micro-batch (with its events) whenever the lesson is about accumulation,
    # one micro-batch with no_sync set included; the plain step otherwise
    accumulating = k > 1 or scenario.train.no_sync != "none"
    every_step = values_at_every_step(scenario.to_dict())  # accumulating, no_sync or uneven
    completed = 0
    uneven = scenario.uneven
    my_steps = uneven.steps_of(rank, scenario.world_size) if uneven else scenario.steps
    together = uneven.batches if uneven else scenario.steps  # steps every rank trains
    with Join([ddp]) if uneven is not None and uneven.join else nullcontext():
        for step in range(my_steps):
            if fault.get("rank") == rank and fault.get("step") == step:
                outbox.flush()
                if fault.get("kind") == "exit":
                    os._exit(17)
                raise RankFault(f"injected fault at step {step}")
            micro = take(mine, k)  # k micro-batches make one optimizer step
            epoch, rows = micro[0][0], micro_rows(micro)
            theirs = [take(it, k) for it in every]
            ref = None
            full: dict[str, torch.Tensor] = {}
            if oracle is not None:
                oracle.solo_step(
                    theirs
                )  # every step: the single-process run beside an accumulating one
            if reference_due(step):
                if oracle is not None:
                    ref, full = oracle.step(run, step, theirs)
                if scenario.world_size > 1 and step < together:
                    # The others would wait for rank 0 inside DDP's all-reduce, and the timeline
                    # would show our reference as a straggler; they wait here instead.
                    dist.barrier()
            capture.reset()
            capture.values = every_step or values_due(step, my_steps)
            optimizer.zero_grad()
            if not accumulating:
                x, y = tensors(rows)
                t0 = time.monotonic()
                try:
                    out = ddp(x)
                except RuntimeError as exc:  # a parameter with no gradient: DDP's own words
                    if not is_reducer_error(exc):
                        raise
                    outbox.add(reducer_error(run, step, rank, exc, model), now=True)
                    break
                loss = loss_fn(out, y)
                t1 = time.monotonic()
                loss.backward()  # DDP's all-reduce runs in here, through the capture hook
                spans = {"forward": [[t0, t1]], "backward": [[t1, time.monotonic()]]}
                loss_value, micro_events = loss.detach().item(), []
            else:
                acc = run_micro_batches(
                    run=run,
                    step=step,
                    rank=rank,
                    scenario=scenario,
                    ddp=ddp,
                    model=model,
                    loss_fn=loss_fn,
                    tensors=tensors,
                    micro=micro,
                    fired=capture.fired,
                )
                loss_value, micro_events, spans = acc.loss, acc.events, acc.spans
            t2 = time.monotonic()
            optimizer.step()
            t3 = time.monotonic()
            events: list[protocol.Event] = [] if ref is None else [ref]
            if buffers is not None:
                events.append(BufferValues(run, step, rank, buffers.before, buffers.after))
            events += micro_events
            buckets = [capture.buckets[i] for i in sorted(capture.buckets)]
            # Divergence is decided on what every rank holds alike (DDP's average, the
            # parameters), so every rank stops at the same step. Not on the loss, which is each
            # rank's own: a rank whose loss overflowed while its gradient did not stopped alone,
            # and the others failed in their next all-reduce (gloo: "Read error").
            if capture.values:
                values = _values(model, capture, full)
                finite = _finite(values.params) and _finite(values.averaged)
                events += [
                    protocol.LocalGrad(
                        run, step, rank, loss_value, values.local, buckets, rows, epoch
                    ),
                    protocol.AveragedGrad(run, step, rank, values.averaged, values.vs_full),
                    protocol.Params(run, step, rank, values.params),
                ]
            else:  # the loss, the buckets and the timings alone (model.reference.values_due)
                finite = _params_finite(model)
                events.append(
                    protocol.LocalGrad(
                        run, step, rank, loss_value, {}, buckets, rows, epoch, values=False
                    )
                )
            events.append(
                protocol.Timing(
                    run,
                    step,
                    rank,
                    {**spans, "allreduce": capture.allreduce_spans, "step": [[t2, t3]]},
                    ready=capture.ready,
                    buckets=[capture.bucket_spans[i] for i in sorted(capture.bucket_spans)],
                )
            )
            # uneven inputs: every step at once, so a stall never hides the step before it
            outbox.add(*events, now=step == 0 or uneven is not None)
            completed = step + 1
            if waits is not None:
                waits.completed = completed
                capture.reset()  # what the hook sees next is Join's shadowing
            if not finite:
                what = "loss and parameters" if not math.isfinite(loss_value) else "parameters"
                outbox.control({"ctl": "diverged", "step": step, "what": what})
                break
        if uneven is not None:
            outbox.add(OutOfData(run, rank, completed, uneven.join), now=True)
    stopped = completed < my_steps  # diverged, or DDP's reducer refused a step
    if scenario.ddp.find_unused_parameters and scenario.model.unused and not stopped:
        outbox.add(time_unused_cost(run, rank, scenario, *tensors(rows)), now=True)
    if scenario.train.checkpoint and folder is not None and not stopped:
        save_and_load(run, rank, model, folder, outbox)
    if uneven is not None and waits is not None:
        if uneven.join:
            report_shadows(run, rank, completed, capture.shadow_steps(), outbox)
        # the script's next collective (a barrier before saving): under Join every rank gets
        # here; without, the ranks still training never do
        waits.enter("barrier")
        dist.barrier()
        waits.leave()
        solo = None
        if oracle is not None and uneven.join:
            solo = encode_all(oracle.uneven_run())
        outbox.add(FinalParams(run, rank, named_values(model), solo), now=True)
    outbox.control({"ctl": "done", "steps": completed})
