"""One rank's DDP training loop: the model, DDP and the capture hook, one step at a time.

The loop knows DDP training only; a kind of run adds to it through its hooks (see
:mod:`ddp_viz.engine.kind_parts`): around the loop, after each step, after the loop. Each step
sends the rank's loss, its local gradient, DDP's average, the parameters and the timings.

The loop's own work beside DDP's is what a run costs over a bare DDP loop with PyTorch's
Python comm hook (``ddp-viz bench --only pipeline``), so a step pays only for what it sends:
the kinds' per-step hooks are resolved once before the loop (a plain run calls none), and a
step without values encodes two small events.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.engine.capture import Capture, _hook
from ddp_viz.engine.data import micro_rows, rank_batches, take
from ddp_viz.engine.kind_parts import TrainingHooks
from ddp_viz.engine.models import build_model, named_values, torch_dtype
from ddp_viz.engine.outbox import Outbox, plain_line
from ddp_viz.engine.reference import Oracle
from ddp_viz.engine.step_values import detached, finite_params, step_values
from ddp_viz.model import protocol
from ddp_viz.model.protocol import LocalGrad, Timing
from ddp_viz.model.reference import reference_due, values_at_every_step, values_due
from ddp_viz.model.scenario import Scenario


class RankFault(RuntimeError):
    """An injected failure, used by the reliability tests."""


class _StepRefused(Exception):
    """DDP refused the step's forward and a kind reported why: the loop ends."""


class Trainer:
    """Everything one rank trains with in one run, built once; :meth:`train` runs the loop."""

    def __init__(
        self,
        run: int,
        rank: int,
        scenario: Scenario,
        outbox: Outbox,
        hooks: TrainingHooks,
        folder: Path | None = None,
    ) -> None:
        self.run, self.rank, self.scenario, self.outbox = run, rank, scenario, outbox
        self.hooks, self.folder = hooks, folder
        # listing: ddp-wrap
        self.model = build_model(scenario)
        self.oracle = Oracle(scenario, self.model) if rank == 0 else None
        # broadcasts rank 0's parameters (and buffers) to every rank
        self.ddp = DDP(
            self.model,
            bucket_cap_mb=scenario.ddp.bucket_cap_mb,
            forward_sync_buffers=scenario.ddp.forward_sync_buffers,
            find_unused_parameters=scenario.ddp.find_unused_parameters,
        )
        outbox.add(protocol.InitialParams(run, rank, named_values(self.model)), now=True)
        names = {id(p): n for n, p in self.model.named_parameters()}
        self.capture = Capture(names=names, observer=hooks.bucket_observer())
        self.ddp.register_comm_hook(self.capture, _hook)
        capture = self.capture
        for name, p in self.model.named_parameters():
            # fires when autograd has accumulated this parameter's gradient (before DDP's
            # reducer copies it into its bucket): the order the gradients became ready in.
            # The hook holds the capture, never the trainer: autograd keeps hooks where the
            # garbage collector cannot see them, so a hook that held the trainer kept its DDP
            # and process group, and their sockets, alive for good (5 descriptors a run)
            p.register_post_accumulate_grad_hook(lambda _p, n=name: capture.on_grad_ready(n))
        self.optimizer = torch.optim.SGD(self.ddp.parameters(), lr=scenario.lr)
        self.loss_fn = nn.MSELoss(reduction=scenario.train.loss_reduction)
        # end listing
        self.views = detached(self.model)  # for the finite check of a step without values
        self.dtype = torch_dtype(scenario)
        self.mine = rank_batches(scenario, rank)
        # rank 0's reference needs every rank's rows: the samplers are deterministic, so it
        # runs one for each rank itself, in step with the ranks, without asking them
        every = range(scenario.world_size) if self.oracle else ()
        self.every = [rank_batches(scenario, r) for r in every]
        self._cached: tuple[list[int], torch.Tensor, torch.Tensor] | None = None
        self.k = scenario.train.accumulate  # micro-batches a step (a kind runs them, if > 1)
        self.every_step = values_at_every_step(scenario.to_dict())
        self.my_steps, self.together = hooks.steps(scenario.steps)
        self.rows: list[int] = []
        hooks.built(self)
        self.each = hooks.each_step()  # after built(), which may decide what a kind needs

    def release(self) -> None:
        """Let DDP (and its reducer) go while the process group is still registered. Freed
        after ``destroy_process_group``, the reducer destroyed the group itself, holding the
        GIL while it joined gloo's thread, which was waiting for the GIL to finish a comm
        hook's future: the rank hung at the end of a run."""
        del self.ddp

    def tensors(self, rows: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        if self._cached is None or self._cached[0] != rows:
            x = torch.tensor([self.scenario.x[i] for i in rows], dtype=self.dtype).unsqueeze(1)
            y = torch.tensor([self.scenario.y[i] for i in rows], dtype=self.dtype).unsqueeze(1)
            self._cached = (rows, x, y)
        return self._cached[1], self._cached[2]

    def train(self, fault: dict) -> int:
        """Every step of this rank; returns how many completed."""
        completed = 0
        # listing: loop-context
        with self.hooks.around_loop(self):
            # end listing
            # listing: train-loop
            for step in range(self.my_steps):
                # end listing
                self._maybe_fault(fault, step)
                try:
                    finite, loss = self._step(step)
                except _StepRefused:
                    break
                completed = step + 1
                for after in self.each.after_step:
                    after(self, completed)
                if not finite:
                    what = "loss and parameters" if not math.isfinite(loss) else "parameters"
                    self.outbox.control({"ctl": "diverged", "step": step, "what": what})
                    break
            self.hooks.loop_ended(self, completed)
        self.hooks.finish(self, completed)
        return completed

    def _maybe_fault(self, fault: dict, step: int) -> None:
        if fault.get("rank") == self.rank and fault.get("step") == step:
            self.outbox.flush()
            if fault.get("kind") == "exit":
                os._exit(17)
            raise RankFault(f"injected fault at step {step}")

    def _step(self, step: int) -> tuple[bool, float]:
        # listing: take-micro
        micro = take(self.mine, self.k)  # k micro-batches make one optimizer step
        # end listing
        epoch, self.rows = micro[0][0], micro_rows(micro)
        theirs = [take(it, self.k) for it in self.every]
        for before in self.each.before_step:
            before(self, step, theirs)
        ref, full = self._reference(step, theirs)
        # listing: zero-grad
        self.capture.reset()
        self.capture.values = self.every_step or values_due(step, self.my_steps)
        self.optimizer.zero_grad()
        # end listing
        loss, micro_events, spans = self._forward_backward(step, micro)
        # listing: optimizer-step
        t2 = time.monotonic()
        self.optimizer.step()
        # end listing
        t3 = time.monotonic()
        spans["allreduce"], spans["step"] = self.capture.allreduce_spans, [[t2, t3]]
        now = step == 0 or self.hooks.flush_every_step
        events: list[protocol.Event] = [] if ref is None else [ref]
        for own in self.each.step_events:
            events += own(self, step)
        events += micro_events
        if not events and not self.capture.values and math.isfinite(loss):
            # most steps of a long run: two lines, written without their events (plain_line)
            lines = [plain_line(LocalGrad, *self._local(step, loss, epoch, {}, values=False))]
            lines.append(plain_line(Timing, *self._timing(step, spans)))
            self.outbox.add_lines(lines, now=now)
            return finite_params(self.views), loss
        more, finite = self._step_events(step, loss, epoch, full)
        events += more
        events.append(Timing(*self._timing(step, spans)))
        self.outbox.add(*events, now=now)
        return finite, loss

    def _reference(self, step: int, theirs: list) -> tuple[protocol.Reference | None, dict]:
        ref, full = None, {}
        if reference_due(step):
            if self.oracle is not None:
                ref, full = self.oracle.step(self.run, step, theirs)
                ref = self.hooks.reference(self, ref)
            if self.scenario.world_size > 1 and step < self.together:
                # The others would wait for rank 0 inside DDP's all-reduce, and the timeline
                # would show our reference as a straggler; they wait here instead.
                dist.barrier()
        return ref, full

    def _forward_backward(self, step: int, micro: list) -> tuple[float, list, dict]:
        for passes in self.each.forward_backward:  # one kind runs them: the first that does
            done = passes(self, step, micro)
            if done is not None:  # a kind ran the step's passes its way
                return done.loss, done.events, done.spans
        # listing: forward-backward
        x, y = self.tensors(self.rows)
        t0 = time.monotonic()
        try:
            out = self.ddp(x)
        except RuntimeError as exc:  # the lesson's outcome, if a kind says so (a reducer error)
            if not self.hooks.on_forward_error(self, step, exc):
                raise
            raise _StepRefused from exc
        loss = self.loss_fn(out, y)
        t1 = time.monotonic()
        loss.backward()  # DDP's all-reduce runs in here, through the capture hook
        # end listing
        spans = {"forward": [[t0, t1]], "backward": [[t1, time.monotonic()]]}
        return loss.item(), [], spans

    def _step_events(
        self, step: int, loss: float, epoch: int, full: dict
    ) -> tuple[list[protocol.Event], bool]:
        """The step's tensors (or, at a step without values, its loss and buckets alone) and
        whether every parameter is finite. Divergence is decided on what every rank holds
        alike (DDP's average, the parameters), so every rank stops at the same step."""
        c, run, rank = self.capture, self.run, self.rank
        if not c.values:  # the loss, the buckets and the timings alone (values_due)
            local = LocalGrad(*self._local(step, loss, epoch, {}, values=False))
            return [local], finite_params(self.views)
        v = step_values(self.model, c, full)
        return [
            LocalGrad(*self._local(step, loss, epoch, v.local, values=True)),
            protocol.AveragedGrad(run, step, rank, v.averaged, v.vs_full),
            protocol.Params(run, step, rank, v.params),
        ], v.finite

    def _local(self, step: int, loss: float, epoch: int, grads: dict, values: bool) -> tuple:
        """The fields of the step's :class:`~protocol.LocalGrad`, in order."""
        buckets = [self.capture.buckets[i] for i in sorted(self.capture.buckets)]
        return self.run, step, self.rank, loss, grads, buckets, self.rows, epoch, values

    def _timing(self, step: int, spans: dict) -> tuple:
        """The fields of the step's :class:`~protocol.Timing`, in order."""
        c = self.capture
        bucket_spans = [c.bucket_spans[i] for i in sorted(c.bucket_spans)]
        return self.run, step, self.rank, spans, c.ready, bucket_spans
