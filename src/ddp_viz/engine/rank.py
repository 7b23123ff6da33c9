"""What one rank does in one run: gloo process group, DDP, and the capture hook.

The rank's local gradient and the averaged gradient are read *inside* DDP's backward: a comm
hook copies each bucket before calling DDP's own default all-reduce hook and reads the result
from that hook's future. No second, hand-written all-reduce happens anywhere.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms import Join
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.engine.accumulate import micro_rows, run_micro_batches, take
from ddp_viz.engine.data import first_epoch_rows, rank_batches
from ddp_viz.engine.models import build_model, named_values, torch_dtype
from ddp_viz.engine.outbox import Outbox
from ddp_viz.engine.reference import Oracle
from ddp_viz.engine.ring import run_collectives
from ddp_viz.engine.tensors import encode
from ddp_viz.engine.uneven import Heartbeat, WaitState, locked, report_shadows, report_stall
from ddp_viz.model import protocol
from ddp_viz.model.reference import reference_due
from ddp_viz.model.scenario import Scenario

Send = Callable[[dict[str, Any]], None]
PG_TIMEOUT = timedelta(seconds=60)


class RankFault(RuntimeError):
    """An injected failure, used by the reliability tests."""


@dataclass
class Capture:
    """Comm-hook state: per-step local and averaged gradients, mapped to names by identity.

    Inside backward the hook only clones tensors; turning them into named lists waits until
    backward has returned, so the instrumented step stays close to a plain DDP step.
    """

    names: dict[int, str]
    process_group: Any = None
    _local: list[tuple[list[torch.Tensor], torch.Tensor]] = field(default_factory=list)
    _averaged: list[tuple[list[torch.Tensor], torch.Tensor]] = field(default_factory=list)
    buckets: dict[int, list[str]] = field(default_factory=dict)
    allreduce_spans: list[list[float]] = field(default_factory=list)
    # when each parameter's gradient was accumulated, in the order it happened
    ready: list[list[Any]] = field(default_factory=list)
    # per bucket: index, parameter names, bytes, when the hook launched it and when it came back
    bucket_spans: dict[int, dict[str, Any]] = field(default_factory=dict)
    # the buckets the hook ran for since the last clear (one micro-batch's backward)
    fired: list[int] = field(default_factory=list)
    # uneven inputs: where the heartbeat reads the all-reduces still outstanding
    waits: Any = None

    def reset(self) -> None:
        self._local, self._averaged, self.buckets, self.allreduce_spans = [], [], {}, []
        self.ready, self.bucket_spans = [], {}
        self.fired.clear()  # in place: the micro-batch loop holds this very list

    def on_grad_ready(self, name: str) -> None:
        self.ready.append([name, time.monotonic()])

    def _split(self, flat: torch.Tensor, params: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        # The bucket buffer is the concatenation of its parameters' gradients, in the order of
        # bucket.parameters(). DDP reorders buckets after step 0, so names come from identity.
        out: dict[str, torch.Tensor] = {}
        offset = 0
        for p in params:
            n = p.numel()
            out[self.names[id(p)]] = flat[offset : offset + n].view(p.shape)
            offset += n
        return out

    def _named(self, parts: list[tuple[list[torch.Tensor], torch.Tensor]]) -> dict:
        out: dict[str, torch.Tensor] = {}
        for params, flat in parts:
            out.update(self._split(flat, params))
        return out

    @property
    def local(self) -> dict[str, torch.Tensor]:
        return self._named(self._local)

    @property
    def averaged(self) -> dict[str, torch.Tensor]:
        return self._named(self._averaged)

    def shadow_steps(self) -> list[tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]]:
        """Under Join, after this rank ran out of batches: what its hook all-reduced for each
        step of the ranks still training (bucket 0 starts a step), zeros sent and average
        received, by parameter name."""
        steps: list[tuple[list, list]] = []
        for i, index in enumerate(self.fired):
            if index == 0 or not steps:
                steps.append(([], []))
            steps[-1][0].append(self._local[i])
            if i < len(self._averaged):
                steps[-1][1].append(self._averaged[i])
        return [(self._named(local), self._named(avg)) for local, avg in steps]

    def hook(self, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        start = time.monotonic()
        params = list(bucket.parameters())
        index = bucket.index()
        buffer = bucket.buffer()
        self.buckets[index] = [self.names[id(p)] for p in params]
        self.fired.append(index)
        if self.waits is not None:
            self.waits.outstanding[index] = start
        self.bucket_spans[index] = {
            "index": index,
            "params": self.buckets[index],
            "bytes": buffer.numel() * buffer.element_size(),
            "launched": start,
            "finished": None,
        }
        self._local.append((params, buffer.detach().clone()))
        fut = default_hooks.allreduce_hook(self.process_group, bucket)

        def read_average(f: torch.futures.Future[torch.Tensor]) -> torch.Tensor:
            averaged = f.value()
            tensor = averaged[0] if isinstance(averaged, list) else averaged
            self._averaged.append((params, tensor.detach().clone()))
            end = time.monotonic()
            self.allreduce_spans.append([start, end])
            self.bucket_spans[index]["finished"] = end
            if self.waits is not None:
                self.waits.outstanding.pop(index, None)
            return tensor

        return fut.then(read_average)


def _hook(state, bucket):  # type: ignore[no-untyped-def]
    # Left unannotated on purpose: DDP inspects a hook's annotations and, with postponed
    # evaluation, string annotations fail its check. See Capture.hook for the types.
    return state.hook(bucket)


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


def _encoded(tensors: dict[str, torch.Tensor], digest: bool = True) -> dict[str, Any]:
    return {n: encode(t, digest) for n, t in tensors.items()}


def run_rank(job: dict[str, Any], send: Send) -> None:
    """Train ``job["scenario"]`` as rank ``job["rank"]``; report through ``send``.

    Sends protocol events as dicts plus control messages ``{"ctl": ...}`` for the launcher:
    ``diverged`` and ``done``.
    """
    scenario = Scenario.from_mapping(job["scenario"])
    run, rank, world = int(job["run"]), int(job["rank"]), scenario.world_size
    fault = job.get("fault") or {}
    rows = first_epoch_rows(scenario, rank) if scenario.collective is None else []
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
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
    try:
        try:
            if scenario.collective is not None:  # the all-reduce itself, no training
                steps = run_collectives(run, rank, scenario, outbox)
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
                _train(run, rank, scenario, fault, outbox)
        finally:
            outbox.flush()  # what happened before an error reaches the window
    finally:
        dist.destroy_process_group()
        del store


def _train(
    run: int,
    rank: int,
    scenario: Scenario,
    fault: dict,
    outbox: Outbox,
    waits: WaitState | None = None,
) -> None:
    model = build_model(scenario)
    oracle = Oracle(scenario, model) if rank == 0 else None
    # broadcasts rank 0's parameters to every rank
    ddp = DDP(model, bucket_cap_mb=scenario.ddp.bucket_cap_mb)
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
            optimizer.zero_grad()
            if not accumulating:
                x, y = tensors(rows)
                t0 = time.monotonic()
                loss = loss_fn(ddp(x), y)
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
            params = named_values(model)
            buckets = [capture.buckets[i] for i in sorted(capture.buckets)]
            averaged = capture.averaged
            # rank 0 compares every value of DDP's average with the reference, so the check stays
            # exact when the events carry summaries of big tensors
            vs_full = {
                n: float((averaged[n].double() - full[n]).abs().max())
                for n in full
                if n in averaged
            }
            averaged_values = _encoded(averaged)
            events: list[protocol.Event] = [] if ref is None else [ref]
            events += micro_events
            events += [
                protocol.LocalGrad(  # local gradients differ by design: no digest to compare
                    run,
                    step,
                    rank,
                    loss_value,
                    _encoded(capture.local, False),
                    buckets,
                    rows,
                    epoch,
                ),
                protocol.AveragedGrad(run, step, rank, averaged_values, vs_full),
                protocol.Params(run, step, rank, params),
                protocol.Timing(
                    run,
                    step,
                    rank,
                    {**spans, "allreduce": capture.allreduce_spans, "step": [[t2, t3]]},
                    ready=capture.ready,
                    buckets=[capture.bucket_spans[i] for i in sorted(capture.bucket_spans)],
                ),
            ]
            # uneven inputs: every step at once, so a stall never hides the step before it
            outbox.add(*events, now=step == 0 or uneven is not None)
            completed = step + 1
            if waits is not None:
                waits.completed = completed
                capture.reset()  # what the hook sees next is Join's shadowing
            # Parameters are identical on every rank, so every rank stops at the same step.
            if not (math.isfinite(loss_value) and _finite(params) and _finite(averaged_values)):
                what = "loss" if not math.isfinite(loss_value) else "parameters"
                outbox.control({"ctl": "diverged", "step": step, "what": what})
                break
        if uneven is not None:
            outbox.add(protocol.OutOfData(run, rank, completed, uneven.join), now=True)
    if uneven is not None and waits is not None:
        if uneven.join:
            report_shadows(run, rank, completed, capture.shadow_steps(), outbox)
        # the script's next collective (a barrier before saving): under Join every rank gets
        # here; without, the ranks still training never do
        waits.enter("barrier")
        dist.barrier()
        waits.leave()
        outbox.add(protocol.FinalParams(run, rank, named_values(model)), now=True)
    outbox.control({"ctl": "done", "steps": completed})
