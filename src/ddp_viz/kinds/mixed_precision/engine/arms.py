"""Mixed precision under DDP on real gloo ranks: one model, five ways, in lockstep.

Every arm is its own replica of the same model (same seed, so the same first weights) in its
own ``DistributedDataParallel`` on the run's process group, with a thin comm hook around
PyTorch's own ``allreduce_hook``, ``fp16_compress_hook`` or ``bf16_compress_hook``: it copies
the bucket before the hook (the rank's local gradient, and the bucket's dtype), notes what the
hook hands to ``dist.all_reduce`` and waits for its result. After backward the program
all-reduces the local gradients once more in float64, uncounted: the exact average every
arm's result is measured against.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.engine.tensors import encode_all
from ddp_viz.kinds.mixed_precision.events import PrecisionStep
from ddp_viz.kinds.mixed_precision.model import (
    FEATURES,
    TINY_FEATURES,
    Arm,
    PrecisionSpec,
)

ROWS = 4096  # the data set's rows; each step takes the next batch × world of them
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


class Wire:
    """What the hook of the arm set with :meth:`open` handed to ``dist.all_reduce``: bytes,
    dtype and the tensors themselves (None open: not counted, as for the exact average)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.open_for: str | None = None
        self.sent: list[torch.Tensor] = []

    def open(self, arm_id: str) -> None:
        with self._lock:
            self.open_for, self.sent = arm_id, []

    def close(self) -> list[torch.Tensor]:
        with self._lock:
            self.open_for = None
            return self.sent

    def add(self, tensor: torch.Tensor) -> None:
        with self._lock:
            if self.open_for is not None:
                self.sent.append(tensor.detach().clone())  # before the sum overwrites it


@contextlib.contextmanager
def watching_all_reduce(wire: Wire) -> Iterator[Wire]:
    original = dist.all_reduce

    def all_reduce(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        wire.add(tensor)
        return original(tensor, *args, **kwargs)

    dist.all_reduce = all_reduce  # type: ignore[assignment]
    try:
        yield wire
    finally:
        dist.all_reduce = original  # type: ignore[assignment]


def build_model(spec: PrecisionSpec) -> nn.Module:
    torch.manual_seed(spec.seed)
    w = spec.width
    layers = [("inp", nn.Linear(FEATURES, w)), ("act1", nn.Tanh())]
    layers += [("hidden", nn.Linear(w, w)), ("act2", nn.Tanh()), ("out", nn.Linear(w, 1))]
    return nn.Sequential(OrderedDict(layers))


def dataset(spec: PrecisionSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of a smooth target, y = tanh(x A) b; the last inputs are multiplied by ``tiny``
    after the target is made, so their weights' gradients are that much smaller."""
    g = torch.Generator().manual_seed(spec.seed * 7919 + 1)
    x = torch.randn(ROWS, FEATURES, generator=g)
    a = torch.randn(FEATURES, 4, generator=g) / 2
    b = torch.randn(4, 1, generator=g)
    y = torch.tanh(x @ a) @ b
    x[:, FEATURES - TINY_FEATURES :] *= spec.tiny
    return x, y


def batch_rows(step: int, rank: int, world: int, size: int) -> torch.Tensor:
    start = (step * world + rank) * size
    return torch.arange(start, start + size) % ROWS


def bf16_on_the_wire(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """``bf16_compress_hook`` under another name: DDP refuses the hook by its name on a build
    without NCCL 2.10 (``nn/parallel/distributed.py``), not by what it does."""
    return default_hooks.bf16_compress_hook(state, bucket)


@dataclass
class Seen:
    """What one step showed of an arm: dtypes, the local and averaged bucket, the wire."""

    dtypes: dict[str, str] = field(default_factory=dict)
    local: list[torch.Tensor] = field(default_factory=list)
    result: list[torch.Tensor] = field(default_factory=list)
    sent: list[torch.Tensor] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # the buckets' parameters, in their order


class Replica:
    """One arm: its replica, its DDP, its optimizer (and scaler) and what its hook saw."""

    def __init__(self, arm: Arm, spec: PrecisionSpec, wire: Wire) -> None:
        self.arm, self.spec, self.wire = arm, spec, wire
        self.seen = Seen()
        # listing: precision-arm
        model = build_model(spec)
        self.ddp = DDP(model)
        self.opt = torch.optim.SGD(self.ddp.parameters(), lr=spec.lr)
        self.scaler = None
        if arm.scaler:
            self.scaler = torch.amp.GradScaler(
                "cpu", init_scale=spec.init_scale, growth_interval=spec.growth_interval
            )
        self.inner: Any = default_hooks.allreduce_hook
        if arm.wire == "float16":
            self.inner = default_hooks.fp16_compress_hook
        elif arm.wire == "bfloat16":
            self.inner = bf16_on_the_wire
        # DDP checks the hook's annotations against real classes: a plain function, unannotated
        self.ddp.register_comm_hook(None, lambda state, bucket: self._hook(state, bucket))
        # end listing
        model.inp.register_forward_hook(self._activation)  # the activations' dtype
        self.names = {id(p): n for n, p in model.named_parameters()}

    def _activation(self, module: nn.Module, args: Any, out: torch.Tensor) -> None:
        self.seen.dtypes["activation"] = str(out.dtype).removeprefix("torch.")

    def _hook(self, state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        # listing: precision-hook
        local = bucket.buffer().detach().clone()
        self.wire.open(self.arm.id)
        try:
            fut = self.inner(state, bucket)
            result = fut.wait()
        finally:
            sent = self.wire.close()
        # end listing
        self.seen.names += [self.names[id(p)] for p in bucket.parameters()]
        self.seen.dtypes["bucket"] = str(local.dtype).removeprefix("torch.")
        self.seen.dtypes["wire"] = str(sent[0].dtype).removeprefix("torch.")
        self.seen.local.append(local)
        self.seen.result.append(result.detach().clone())
        self.seen.sent += sent
        return fut

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if not self.arm.autocast:
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=DTYPES[self.arm.autocast])

    def step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float, float]:
        """One training step; returns the loss, the scale backward used and the next one."""
        self.seen = Seen()
        scale = next_scale = 0.0
        # listing: precision-step
        self.opt.zero_grad()
        with self.autocast():
            loss = F.mse_loss(self.ddp(x), y)
        if self.scaler is None:
            loss.backward()
            self.opt.step()
        else:
            scale = self.scaler.get_scale()
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)  # skipped when a gradient is inf or NaN
            self.scaler.update()  # halve the scale after an inf; grow it after enough steps
            next_scale = self.scaler.get_scale()
        # end listing
        self.seen.dtypes["loss"] = str(loss.dtype).removeprefix("torch.")
        grad = next(iter(self.ddp.parameters())).grad
        self.seen.dtypes["grad"] = (
            str(grad.dtype).removeprefix("torch.") if grad is not None else ""
        )
        param = next(iter(self.ddp.parameters()))
        self.seen.dtypes["param"] = str(param.dtype).removeprefix("torch.")
        return float(loss.detach().float()), scale, next_scale

    def params(self) -> list[torch.Tensor]:
        return [p.detach().clone() for p in self.ddp.parameters()]


def exact_error(seen: Seen, world: int) -> float:
    """The averaged bucket's relative error against the float64 average of every rank's
    local bucket (one more all-reduce, uncounted)."""
    local = torch.cat([t.double().flatten() for t in seen.local])
    dist.all_reduce(local)
    local /= world
    got = torch.cat([t.double().flatten() for t in seen.result])
    norm = float(local.norm())
    diff = float((got - local).norm())
    return diff / norm if norm > 0 else diff


def underflow(seen: Seen) -> int:
    """Values of the rank's local gradient that were not 0 and went on the wire as 0."""
    local = torch.cat([t.flatten() for t in seen.local])
    sent = torch.cat([t.flatten() for t in seen.sent])
    if sent.numel() != local.numel():
        return 0
    return int(((local != 0) & (sent == 0)).sum())


def refusal(spec: PrecisionSpec) -> str:
    """What ``register_comm_hook`` says to ``bf16_compress_hook`` under its own name ("" when
    it takes it): a scratch DDP, so every rank builds and drops it alike."""
    scratch = DDP(build_model(spec))
    try:
        scratch.register_comm_hook(None, default_hooks.bf16_compress_hook)
    except Exception as error:  # DDP raises a RuntimeError, through its own helper
        return f"{type(error).__name__}: {error}".strip()
    return ""


def report(
    rep: Replica, base: list[torch.Tensor], before: list[torch.Tensor], at: tuple[Any, ...]
) -> PrecisionStep:
    """The arm's event for this step; ``base``: the float32 arm's parameters after it."""
    run, rank, step, world, (loss, scale, next_scale) = at
    seen = rep.seen
    after = rep.params()
    stepped = any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))
    diff = max(float((a - b).abs().max()) for a, b in zip(after, base, strict=True))
    local = torch.cat([t.flatten() for t in seen.local])
    result = torch.cat([t.flatten() for t in seen.result])
    grads: dict[str, Any] = {}
    if rep.spec.grads:
        grads = {
            "local": encode_all(split(rep, seen.local), digest=False),
            "averaged": encode_all(split(rep, seen.result)),
        }
    return PrecisionStep(
        run,
        rank,
        rep.arm.id,
        step,
        loss,
        dict(seen.dtypes),
        diff,
        scale,
        next_scale,
        not bool(torch.isfinite(local).all()),
        not bool(torch.isfinite(result).all()),
        stepped,
        sum(t.numel() * t.element_size() for t in seen.sent),
        exact_error(seen, world),
        underflow(seen),
        **grads,
    )


def split(rep: Replica, flat: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """The buckets' flat tensors back into parameters, by ``bucket.parameters()``' names."""
    whole = torch.cat([t.flatten() for t in flat])
    params = dict(rep.ddp.module.named_parameters())
    out, at = {}, 0
    for name in rep.seen.names:
        n = params[name].numel()
        out[name] = whole[at : at + n].view(params[name].shape)
        at += n
    return out
