"""DDP's communication hooks on real gloo ranks: one model, several hooks, in lockstep.

Every variant is its own replica of the same model (same seed, so the same first weights) in
its own ``DistributedDataParallel`` on the run's process group, with its hook registered
through ``register_comm_hook``: PyTorch's own ``allreduce_hook``, ``fp16_compress_hook`` and
``powerSGD_hook`` from ``torch.distributed.algorithms.ddp_comm_hooks``. Each step every
variant trains on the same rows. A thin wrapper around each hook copies the bucket before it
(the rank's local gradient), counts what the hook hands to ``dist.all_reduce`` and waits for
its result (so each bucket's bytes are its own: the buckets do not overlap here). After
backward the program all-reduces the local gradients once more in float64, uncounted: the
exact average every hook's result is measured against.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.engine.outbox import Outbox
from ddp_viz.engine.tensors import encode_all
from ddp_viz.kinds.hook_compression.events import HookLowRank, HookStep
from ddp_viz.kinds.hook_compression.model import (
    FEATURES,
    KIND,
    SHOWN_LAYER,
    HooksSpec,
    Variant,
    compressed,
)
from ddp_viz.model.scenario import Scenario

ROWS = 4096  # the data set's rows; each step takes the next batch × world of them
CORNER = 12  # rows and columns of the shown layer's corner


class Counter:
    """Bytes and calls per bucket, for the bucket set with :meth:`open` (None: not counted,
    as for the reference average the program computes itself)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.bucket: int | None = None
        self.sent: dict[int, int] = {}
        self.calls: dict[int, int] = {}

    def open(self, bucket: int) -> None:
        with self._lock:
            self.bucket = bucket
            self.sent[bucket] = 0
            self.calls[bucket] = 0

    def close(self) -> None:
        with self._lock:
            self.bucket = None

    def add(self, tensor: torch.Tensor) -> None:
        with self._lock:
            if self.bucket is not None:
                self.sent[self.bucket] += tensor.numel() * tensor.element_size()
                self.calls[self.bucket] += 1

    def reset(self) -> None:
        with self._lock:
            self.sent.clear()
            self.calls.clear()


@contextmanager
def counting_all_reduce(counter: Counter) -> Iterator[Counter]:
    original = dist.all_reduce

    def all_reduce(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        counter.add(tensor)
        return original(tensor, *args, **kwargs)

    dist.all_reduce = all_reduce  # type: ignore[assignment]
    try:
        yield counter
    finally:
        dist.all_reduce = original  # type: ignore[assignment]


def build_model(spec: HooksSpec) -> nn.Module:
    torch.manual_seed(spec.seed)
    w = spec.width
    layers = [("inp", nn.Linear(FEATURES, w)), ("act1", nn.Tanh())]
    layers += [("hidden", nn.Linear(w, w)), ("act2", nn.Tanh()), ("out", nn.Linear(w, 1))]
    return nn.Sequential(OrderedDict(layers))


def dataset(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of a smooth target the model can learn: y = tanh(x A) b, A 16 × 4."""
    g = torch.Generator().manual_seed(seed * 7919 + 1)
    x = torch.randn(ROWS, FEATURES, generator=g)
    a = torch.randn(FEATURES, 4, generator=g) / 2
    b = torch.randn(4, 1, generator=g)
    return x, torch.tanh(x @ a) @ b


def batch_rows(step: int, rank: int, world: int, size: int) -> torch.Tensor:
    start = (step * world + rank) * size
    return torch.arange(start, start + size) % ROWS


@dataclass
class Captured:
    """One bucket of one step: its parameters' names, the rank's local gradients, what the
    hook handed back, and whether PowerSGD compressed it."""

    names: list[str]
    local: list[torch.Tensor]
    result: list[torch.Tensor]
    compressed: bool


class Arm:
    """One variant: its replica, its DDP, its hook and what the hook saw this step."""

    def __init__(self, variant: Variant, spec: HooksSpec, counter: Counter) -> None:
        self.variant, self.spec, self.counter = variant, spec, counter
        # listing: hooks-arm
        model = build_model(spec)
        self.names = {id(p): n for n, p in model.named_parameters()}
        self.shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
        self.ddp = DDP(model, bucket_cap_mb=spec.bucket_cap_mb)
        self.opt = torch.optim.SGD(self.ddp.parameters(), lr=spec.lr)
        self.state: Any = None
        if variant.hook == "powersgd":
            self.state = powerSGD_hook.PowerSGDState(
                process_group=None,
                matrix_approximation_rank=variant.rank_r,
                start_powerSGD_iter=spec.warmup,
                use_error_feedback=variant.feedback,
                warm_start=True,
                random_seed=spec.seed,
            )
            self.inner: Any = powerSGD_hook.powerSGD_hook
        elif variant.hook == "fp16":
            self.inner = default_hooks.fp16_compress_hook
        else:
            self.inner = default_hooks.allreduce_hook
        # DDP checks the hook's annotations against real classes: a plain function, unannotated
        self.ddp.register_comm_hook(self.state, lambda state, bucket: self._hook(state, bucket))
        # end listing
        self.captured: dict[int, Captured] = {}
        self.factors: tuple[torch.Tensor, torch.Tensor] | None = None
        self.exact: dict[str, torch.Tensor] = {}  # this step's exact average, by name

    def _hook(self, state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        # listing: hooks-wrapper
        index = bucket.index()
        params = bucket.parameters()
        local = bucket.buffer().detach().clone()
        squeezed = self.state is not None and state.iter >= state.start_powerSGD_iter
        self.counter.open(index)
        try:
            fut = self.inner(state, bucket)
            result = fut.wait()  # this bucket's all-reduces, every one of them, are done
        finally:
            self.counter.close()
        # end listing
        names = [self.names[id(p)] for p in params]
        r = self.variant.rank_r
        sizes = [p.numel() for p in params]
        shaped = [p.shape for p in params]
        self.captured[index] = Captured(
            names,
            [t.view(s) for t, s in zip(local.split(sizes), shaped, strict=True)],
            [t.detach().clone().view(s) for t, s in zip(result.split(sizes), shaped, strict=True)],
            squeezed,
        )
        if squeezed and SHOWN_LAYER in names and compressed(self.shapes[SHOWN_LAYER], r):
            self.factors = self._factors(index, names)
        return fut

    def _factors(self, index: int, names: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The shown layer's P (n × r) and Q (m × r) in the hook's memory, found the way the
        hook lays them out: compressed tensors grouped by shape, in order of first appearance."""
        groups: dict[tuple[int, ...], list[str]] = {}
        for name in names:
            if compressed(self.shapes[name], self.variant.rank_r) is not None:
                groups.setdefault(self.shapes[name], []).append(name)
        p_at = q_at = 0
        for name in (n for group in groups.values() for n in group):
            n, m, r = compressed(self.shapes[name], self.variant.rank_r)  # type: ignore[misc]
            if name == SHOWN_LAYER:
                p = self.state.p_memory_dict[index][p_at : p_at + n * r].view(n, r)
                q = self.state.q_memory_dict[index][q_at : q_at + m * r].view(m, r)
                return p.clone(), q.clone()
            p_at, q_at = p_at + n * r, q_at + m * r
        raise AssertionError(f"{SHOWN_LAYER} is not compressed")

    def step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        self.captured.clear()
        self.factors = None
        self.counter.reset()
        # listing: hooks-step
        self.opt.zero_grad()
        loss = F.mse_loss(self.ddp(x), y)
        loss.backward()
        self.opt.step()
        # end listing
        return float(loss.detach())

    def residual(self) -> float:
        """The norm of the error feedback carried into the next step, over the compressed
        matrices (for the tensors sent whole it holds local − average, which averages out)."""
        if self.state is None or not self.variant.feedback:
            return 0.0
        total = 0.0
        for index, cap in self.captured.items():
            error = self.state.error_dict.get(index)
            if error is None:
                continue
            at = 0
            for name, t in zip(cap.names, cap.local, strict=True):
                if compressed(self.shapes[name], self.variant.rank_r) is not None:
                    total += float(error[at : at + t.numel()].double().pow(2).sum())
                at += t.numel()
        return math.sqrt(total)


def by_name(arm: Arm, which: str) -> dict[str, torch.Tensor]:
    """Every bucket's ``local`` or ``result`` tensors of this step, by parameter name."""
    caps = [arm.captured[i] for i in sorted(arm.captured)]
    return {n: t for cap in caps for n, t in zip(cap.names, getattr(cap, which), strict=True)}


def exact_average(arm: Arm, world: int) -> dict[str, torch.Tensor]:
    """Every rank's local gradients all-reduced in float64 (uncounted), divided by the world."""
    local = by_name(arm, "local")
    order = sorted(local)
    flat = torch.cat([local[n].double().flatten() for n in order])
    dist.all_reduce(flat)
    flat /= world
    out, at = {}, 0
    for n in order:
        out[n] = flat[at : at + local[n].numel()].view(local[n].shape)
        at += local[n].numel()
    return out


def report(arm: Arm, run: int, rank: int, step: int, loss: float, world: int) -> HookStep:
    exact = exact_average(arm, world)
    caps = [arm.captured[i] for i in sorted(arm.captured)]
    result = by_name(arm, "result")
    errors = {}
    for name, want in exact.items():
        diff = float((result[name].double() - want).norm())
        errors[name] = diff / float(want.norm()) if float(want.norm()) > 0 else diff
    grads: dict[str, Any] = {}
    if arm.spec.grads:
        local = by_name(arm, "local")
        grads = {"local": encode_all(local, digest=False), "averaged": encode_all(result)}
    arm.exact = exact
    return HookStep(
        run,
        rank,
        arm.variant.id,
        step,
        loss,
        [arm.counter.sent.get(i, 0) for i in sorted(arm.captured)],
        [arm.counter.calls.get(i, 0) for i in sorted(arm.captured)],
        [cap.names for cap in caps],
        errors,
        arm.residual(),
        any(cap.compressed for cap in caps),
        **grads,
    )


def low_rank(arm: Arm, run: int, step: int) -> HookLowRank | None:
    if arm.factors is None:
        return None
    p, q = arm.factors
    exact = arm.exact[SHOWN_LAYER]
    c = min(CORNER, *exact.shape)
    approx = p[:c] @ q[:c].T
    return HookLowRank(
        run,
        arm.variant.id,
        step,
        SHOWN_LAYER,
        list(exact.shape),
        p.shape[1],
        p[:c].tolist(),
        q[:c].tolist(),
        exact[:c, :c].tolist(),
        approx.tolist(),
    )


def run_hooks(run: int, rank: int, scenario: Scenario, outbox: Outbox) -> int:
    """The lesson's run: every variant, step by step; returns the steps."""
    spec = scenario.table(KIND)
    assert isinstance(spec, HooksSpec)
    world = scenario.world_size
    x, y = dataset(spec.seed)
    counter = Counter()
    with counting_all_reduce(counter):
        arms = [Arm(v, spec, counter) for v in spec.variants()]
        shown = next((a for a in arms if a.variant.hook == "powersgd"), None)
        for step in range(spec.steps):
            rows = batch_rows(step, rank, world, spec.batch)
            for arm in arms:
                loss = arm.step(x[rows], y[rows])
                outbox.add(report(arm, run, rank, step, loss, world))
                if arm is shown and rank == 0 and (event := low_rank(arm, run, step)):
                    outbox.add(event)
    outbox.flush()
    return spec.steps


PROGRAM = run_hooks
