"""Inside a watched script's processes: watch every ``DistributedDataParallel`` it builds.

:func:`patch` wraps ``DistributedDataParallel.__init__`` and ``register_comm_hook``:

- a script that registers its own comm hook (fp16 compression, PowerSGD, …) gets its hook
  wrapped, not replaced: the wrapper copies the bucket (the rank's local gradient), calls the
  script's hook with the script's state, and reads what its future returns;
- a script that registers none gets what DDP does without a hook (scale by the reciprocal of
  the world size, then ``all_reduce``, bit for bit as unwatched: see ``Watch._launch``),
  watched the same way, registered just before its first forward (so a hook the script
  registers after building DDP still comes first).

A step's events leave when the next forward begins (its backward, all-reduces and optimizer
step are over by then) and at exit. Nothing here raises into the script: a failure turns the
watch off and the training goes on.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import os
import socket
import sys
import time
import weakref
from typing import Any

import torch
import torch.distributed as dist

from ddp_viz.kinds.watched import wire
from ddp_viz.kinds.watched.events import WatchDropped
from ddp_viz.kinds.watched.watch import calls, checks, failure
from ddp_viz.kinds.watched.watch.calls import CALLS, call_site
from ddp_viz.kinds.watched.watch.heartbeat import Heartbeat
from ddp_viz.kinds.watched.watch.sender import Sender
from ddp_viz.kinds.watched.watch.step_events import Step
from ddp_viz.kinds.watched.watch.sync_checks import SyncChecks
from ddp_viz.model import protocol

RUN = 1  # a listener records one watched run
# A host's clock as this rank reads it. DDP_VIZ_CLOCK_SKEW_S moves it, so that tests on one
# machine can play hosts whose clocks differ (the listener must put them back on one clock).
_SKEW = float(os.environ.get("DDP_VIZ_CLOCK_SKEW_S", "0") or 0)
# Copying and summarising every gradient of every step would cost a big model's training far
# more than it can spare, so a step is captured in full (gradients, parameters) only while that
# work stays within this fraction of the training's time; every other step reports its
# timings alone. 1 captures every step (small scripts, tests).
DEFAULT_BUDGET = 0.02
# Steps in full are the multiples of a period: the smallest power of two that keeps a full
# capture's average cost within the budget's share of the average step. Each rank works out
# its own, but a multiple of the longest period is a multiple of every shorter one, so the
# steps the slowest-capturing rank takes in full are taken in full by every rank, and the
# averages can be compared there. (Chosen by time alone, step by step, the ranks' full steps
# hardly met: 3 of 27 in a 400-step run.)
MAX_PERIOD = 1 << 16


def _now() -> float:
    return time.monotonic() + _SKEW


class Watch:
    """One DDP instance's capture and its sender."""

    def __init__(self, ddp: Any, addr: str, token: str) -> None:
        # weakly: the script's DDP must go when the script drops it, as it would unwatched
        # (kept alive to interpreter exit, its reducer outlived the process group)
        self._ddp = weakref.ref(ddp)
        self.rank = dist.get_rank(ddp.process_group)
        self.world = dist.get_world_size(ddp.process_group)
        module = ddp.module
        self.named = list(module.named_parameters())
        self.names = {id(p): n for n, p in self.named}
        self.registered = False
        self.step = 0
        self.budget = _budget(os.environ.get(wire.BUDGET_ENV, ""))
        self.spent = 0.0  # seconds of capture work, in this thread and the sender's
        self.started: float | None = None
        self.full = True
        self.period = 1
        self.captures = 0  # steps captured in full so far
        self.first_cost = 0.0  # what the first of them cost, counted when the next begins
        self._reset()
        self.sender = Sender(addr, token, self._hello)
        self.non_finite = checks.NonFinite()
        checks.watching(self.non_finite)
        self.heart = Heartbeat(self.rank, self._beat)
        self.got_grad: set[int] = set()  # ids of the parameters that got a gradient this step
        self.sync = SyncChecks(self.rank)  # gradients DDP never averaged
        self.no_grad_last: list[str] = []  # those that got none in the step before
        self.closed = False
        for _, p in self.named:
            if p.requires_grad and hasattr(p, "register_post_accumulate_grad_hook"):
                p.register_post_accumulate_grad_hook(self._got)
        ddp.register_forward_pre_hook(self._on_forward_started)
        ddp.register_forward_hook(self._on_forward_done)
        module.register_forward_pre_hook(self._on_module_forward)
        atexit.register(self.close)

    def _got(self, p: torch.Tensor) -> None:
        """A parameter's gradient was accumulated (autograd's thread: one set add)."""
        self.got_grad.add(id(p))
        with contextlib.suppress(Exception):  # never into the script
            line = self.sync.grad()
            if line is not None and self.sender.alive:
                self.sender.send(line)

    def _beat(self, line: str) -> None:
        if self.sender.alive:  # a beat is never counted as dropped: the next one says more
            self.sender.send(line)

    def _hello(self) -> wire.Hello:
        return wire.Hello(
            host=os.environ.get("DDP_VIZ_HOST") or socket.gethostname(),
            pid=os.getpid(),
            rank=self.rank,
            local_rank=int(os.environ.get("LOCAL_RANK", self.rank)),
            world_size=self.world,
            clock=_now(),
            params=[{"name": n, "shape": list(p.shape)} for n, p in self.named],
        )

    def _reset(self) -> None:
        self.local: dict[str, torch.Tensor] = {}
        self.averaged: dict[str, torch.Tensor] = {}
        self.buckets: dict[int, dict[str, Any]] = {}
        self.forward: list[list[float]] = []
        self.snapshot: dict[str, torch.Tensor] = {}  # parameters and buffers entering a step

    # --- the hook ------------------------------------------------------------------------
    def hook(self, user_state: Any, user_hook: Any, bucket: dist.GradBucket) -> Any:
        if not self.sender.alive:  # no listener: the script's hook alone, nothing copied
            return self._call(user_state, user_hook, bucket)
        start = _now()
        params = list(bucket.parameters())
        names = [self.names.get(id(p), f"param{i}") for i, p in enumerate(params)]
        buffer = bucket.buffer()
        index = bucket.index()
        # a bucket this step already all-reduced: DDP's join() shadowing the others' steps on
        # a rank out of data (zeros, no forward of its own); its values are not this step's
        repeat = index in self.buckets
        full = self.full and not repeat
        if not repeat and self.non_finite.wants_buckets(full):
            self.non_finite.bucket(buffer, params, names)
        local = buffer.detach().clone() if full else None
        call = CALLS.enter("all_reduce", [[buffer.numel()]], call_site(1), index)
        span = {"index": index, "params": names, "bytes": buffer.numel() * buffer.element_size()}
        span.update(launched=start, finished=None)
        if not repeat:
            self.buckets[index] = span
        if full:
            self.spent += _now() - start
        fut = self._launch(user_state, user_hook, bucket)

        def read(f: torch.futures.Future) -> torch.Tensor:
            value = f.value()
            tensor = value[0] if isinstance(value, list) else value
            span["finished"] = done = _now()
            CALLS.leave(call)
            if local is not None:
                self._split(self.local, local, params, names)
                self._split(self.averaged, tensor.detach(), params, names)
                self.spent += _now() - done
            return tensor

        return fut.then(read)

    def _group(self) -> Any:
        ddp = self._ddp()
        return ddp.process_group if ddp is not None else None

    def _call(self, user_state: Any, user_hook: Any, bucket: dist.GradBucket) -> Any:
        if user_hook is None:  # the same arithmetic as while watched (see _launch)
            return self._launch(None, None, bucket).then(lambda f: f.value()[0])
        return user_hook(user_state, bucket)

    def _launch(self, user_state: Any, user_hook: Any, bucket: dist.GradBucket) -> Any:
        """The script's hook; or, for a script with none, what DDP does without a hook, here,
        so the result is read in our one callback (calling PyTorch's ``allreduce_hook`` and
        chaining ours on its future ran two Python callbacks per bucket and step, each taking
        the GIL on gloo's thread, where the script unwatched runs none).

        Without a hook, DDP's reducer scales each gradient as it copies it into the bucket by
        multiplying with ``1. / div_factor_`` (``Reducer::mark_variable_ready_dense``:
        ``at::mul_out(bucket_view, grad, wrapped_scalar_tensor(1. / div_factor_))``), then
        all-reduces the sum. ``allreduce_hook`` divides instead (``tensor.div_(size)`` in
        ``default_hooks._allreduce_fut``): at a world size that is not a power of two,
        ``x / 3`` and ``x * float32(1/3)`` differ in the last bit for some ``x``, and the run's
        parameters drifted from the unwatched run's (12 of 129 values at 3 ranks). So the
        bucket is multiplied by the same reciprocal, and the run stays the unwatched one bit for
        bit. With ``batched_grad_copy=True`` the reducer divides the flat bucket (``div_``),
        so that is done then."""
        if user_hook is not None:
            with calls.nested():  # its collectives are this bucket's, entered already
                return user_hook(user_state, bucket)
        group = self._group() or dist.group.WORLD
        buffer = bucket.buffer()
        ddp = self._ddp()
        if ddp is not None and getattr(ddp, "batched_grad_copy", False):
            buffer.div_(group.size())
        else:
            buffer.mul_(1.0 / group.size())
        all_reduce = calls.original("all_reduce")
        return all_reduce(buffer, group=group, async_op=True).get_future()

    @staticmethod
    def _split(into: dict, flat: torch.Tensor, params: list, names: list[str]) -> None:
        offset = 0
        for p, name in zip(params, names, strict=True):
            n = p.numel()
            into[name] = flat[offset : offset + n].view(p.shape).clone()
            offset += n

    # --- steps ---------------------------------------------------------------------------
    def _on_forward_started(self, _module: Any, _args: Any) -> None:
        if not self.registered:
            self.registered = True
            if self.sender.alive:  # no listener (it refused at once): DDP stays as it was
                _ORIGINAL["register_comm_hook"](_module, (self, None, None), _hook)
        self.sync.forward(_module)
        if self.got_grad:  # a backward ran: which parameters it left without a gradient
            self.no_grad_last = [
                n for n, p in self.named if p.requires_grad and id(p) not in self.got_grad
            ]
            self.got_grad = set()
        self.flush()
        now = _now()
        if self.started is None:
            self.started = now
        if self.captures > 1 and self.step and now > self.started:
            # the first capture (step 0) pays one-off costs: left out of the average, it no
            # longer pushes one rank to a long period the other does not share
            self.period = full_capture_period(
                (self.spent - self.first_cost) / (self.captures - 1),
                (now - self.started) / self.step,
                self.budget,
            )
        self.full = self.step % self.period == 0
        self.forward.append([now, math.nan])
        CALLS.step = self.step
        self.heart.stepped(now)

    def _on_module_forward(self, module: Any, _args: Any) -> None:
        """The module's own forward, after DDP's buffer broadcast: on a step captured in full,
        what every rank should hold alike (the digests compare it across ranks)."""
        if self.full and self.sender.alive and not self.snapshot:
            t0 = _now()
            self.snapshot = checks.snapshot(module)
            self.spent += _now() - t0

    def account(self, seconds: float) -> None:
        self.spent += seconds

    def _on_forward_done(self, _module: Any, _args: Any, _out: Any) -> None:
        if self.forward:
            self.forward[-1][1] = _now()

    def flush(self) -> None:
        """The last step's events, if its backward all-reduced anything."""
        bad = self.non_finite.found(self.step, self.rank)
        if bad is not None and self.sender.alive:
            self.sender.send(protocol.encode(bad))
        if not self.buckets or not self.sender.alive:
            self._reset()
            return
        # what the step left, copied now (the next optimizer step changes the parameters in
        # place); turning it into events happens on the sender's thread
        t0 = _now()
        full = bool(self.local)
        params = {n: p.detach().clone() for n, p in self.named} if full else {}
        step = Step(self.step, self.rank, self.local, self.averaged, params, self.buckets)
        step.forward, step.account = self.forward[-1:], self.account
        step.snapshot, self.snapshot = self.snapshot, {}
        if full:
            if self.captures == 1:  # what the first capture cost, as far as counted by now
                self.first_cost = self.spent
            self.spent += _now() - t0
            self.captures += 1
            held = [*self.local.values(), *self.averaged.values(), *params.values()]
            held += step.snapshot.values()
            count = 5 if step.snapshot else 4
            nbytes = sum(t.numel() * t.element_size() for t in held)
            self.sender.send_later(step.lines, count, nbytes)
        else:  # its timings alone: nothing held, never dropped for memory
            self.sender.send_later(step.lines, 1, 0)
        self.step += 1
        self._reset()

    def close(self) -> None:
        """The last step and the last word (at exit, ``os._exit``, or a failure): once."""
        if self.closed:
            return
        self.closed = True
        self.flush()
        unsynced = self.sync.last(self.step)
        if unsynced is not None and self.sender.alive:
            self.sender.send(unsynced)
        self.heart.stop()
        last = WatchDropped(RUN, self.rank, self.sender.dropped, self.heart.begun)
        self.sender.close(protocol.encode(last))


def _budget(text: str) -> float:
    """The budget from the environment; DEFAULT_BUDGET for anything but a number > 0 (set by
    hand past the CLI's check, a NaN must not reach the period's arithmetic in a forward)."""
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_BUDGET
    return value if math.isfinite(value) and value > 0 else DEFAULT_BUDGET


def full_capture_period(capture_s: float, step_s: float, budget: float) -> int:
    """The smallest power of two ``p`` with ``capture_s / p <= budget * step_s``; every step
    for a budget of 1 or more (the encoding, on the sender's thread, runs beside the step and
    can cost more than it: the whole budget must still mean every step)."""
    if budget >= 1:
        return 1
    need = capture_s / max(budget * step_s, 1e-12)
    if need <= 1:
        return 1
    return min(MAX_PERIOD, 1 << math.ceil(math.log2(need)))


def _hook(state, bucket):  # type: ignore[no-untyped-def]
    # unannotated on purpose: DDP checks a hook's annotations, and postponed ones fail it
    watch, user_state, user_hook = state
    return watch.hook(user_state, user_hook, bucket)


_ORIGINAL: dict[str, Any] = {}  # DDP's own methods, before patching
_PROCESS = {"watching": False, "told": False}  # one watched DDP per process


def patch(module: Any) -> None:
    """Wrap ``module.DistributedDataParallel`` (``torch.nn.parallel.distributed``)."""
    ddp_class = module.DistributedDataParallel
    if getattr(ddp_class, "_ddp_viz_watched", False):
        return
    calls.install()
    checks.patch_backward()
    failure.wrap_destroy(dist)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # a launcher's rank, not the
        failure.install(_now)  # launcher: a failure before its DDP is built is said too
    addr, token = os.environ.get(wire.ADDR_ENV, ""), os.environ.get(wire.TOKEN_ENV, "")
    init, register = ddp_class.__init__, ddp_class.register_comm_hook
    _ORIGINAL["register_comm_hook"] = register

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        model = args[0] if args else kwargs.get("module")
        failure.install(_now)  # a rank's process (this one builds DDP): its failures are said
        try:  # a failure while DDP is built names the model's parameters (see failure.py)
            named = model.named_parameters()
            failure.STATE["params"] = [{"name": n, "shape": list(p.shape)} for n, p in named]
        except Exception:
            failure.STATE["params"] = []
        init(self, *args, **kwargs)
        failure.STATE["params"] = []
        self._ddp_viz = None
        if _PROCESS["watching"]:  # one run per process: its first DDP model
            if not _PROCESS["told"]:
                _PROCESS["told"] = True
                print(
                    "ddp-viz watch: this process builds another DistributedDataParallel; "
                    "only the first one is watched",
                    file=sys.stderr,
                )
            return
        try:
            self._ddp_viz = Watch(self, addr, token)
            failure.STATE["watch"] = self._ddp_viz
            _PROCESS["watching"] = True
        except Exception:  # a watch that cannot start leaves the script alone
            self._ddp_viz = None

    def register_comm_hook(self, state: Any, hook: Any) -> Any:
        watch = getattr(self, "_ddp_viz", None)
        if watch is None or watch.registered:
            return register(self, state, hook)
        watch.registered = True
        return register(self, (watch, state, hook), _hook)

    ddp_class.__init__ = __init__
    ddp_class.register_comm_hook = register_comm_hook
    ddp_class._ddp_viz_watched = True
