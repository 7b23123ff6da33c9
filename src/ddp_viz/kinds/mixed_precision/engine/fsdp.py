"""FSDP2's own mixed precision on real gloo ranks: ``fully_shard`` with a
``MixedPrecisionPolicy``, beside the same model with the policy's defaults.

While an arm steps, ``torch.distributed.all_gather_single`` and ``reduce_scatter_single`` (which
FSDP2's ``DefaultAllGather`` and ``DefaultReduceScatter`` call through the module) are wrapped:
the wrapper notes the bytes and dtype of each tensor handed to them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from ddp_viz.kinds.mixed_precision.engine.arms import build_model
from ddp_viz.kinds.mixed_precision.events import PrecisionSharded
from ddp_viz.kinds.mixed_precision.model import Arm, PrecisionSpec

OPS = {"all_gather_single": "gather", "reduce_scatter_single": "reduce"}


class Tally:
    """Bytes and dtypes handed to FSDP2's collectives while ``on``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.on = False
        self.bytes = {"gather": 0, "reduce": 0}
        self.dtypes: dict[str, str] = {}

    def reset(self) -> None:
        with self._lock:
            self.bytes = {"gather": 0, "reduce": 0}
            self.dtypes = {}

    def add(self, op: str, tensor: torch.Tensor) -> None:
        with self._lock:
            if self.on:
                self.bytes[op] += tensor.numel() * tensor.element_size()
                self.dtypes[op] = str(tensor.dtype).removeprefix("torch.")


@contextlib.contextmanager
def watching_fsdp(tally: Tally) -> Iterator[Tally]:
    """The input tensor of each call: the first positional tensor, else ``input``."""
    originals = {name: getattr(dist, name) for name in OPS}

    def wrap(name: str) -> Any:
        original = originals[name]

        def call(*args: Any, **kwargs: Any) -> Any:
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            tensor = kwargs.get("input", tensors[1] if len(tensors) > 1 else None)
            if isinstance(tensor, torch.Tensor):
                tally.add(OPS[name], tensor)
            return original(*args, **kwargs)

        return call

    for name in OPS:
        setattr(dist, name, wrap(name))
    try:
        yield tally
    finally:
        for name, original in originals.items():
            setattr(dist, name, original)


class ShardedReplica:
    """One FSDP2 arm: every Linear and the root sharded, with the arm's policy."""

    def __init__(self, arm: Arm, spec: PrecisionSpec, tally: Tally) -> None:
        self.arm, self.tally = arm, tally
        model = build_model(spec)
        # listing: precision-fsdp
        policy = MixedPrecisionPolicy()  # its defaults: nothing cast
        if arm.autocast:
            policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in (model.inp, model.hidden, model.out):
            fully_shard(layer, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        # end listing
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=spec.lr)

    def step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[float, dict[str, str]]:
        self.tally.reset()
        self.tally.on = True
        try:
            self.opt.zero_grad()
            out = self.model(x)
            loss = F.mse_loss(out.float(), y)  # the output in the policy's dtype
            loss.backward()
            self.opt.step()
        finally:
            self.tally.on = False
        param = next(iter(self.model.parameters()))
        dtypes = {
            "activation": str(out.dtype).removeprefix("torch."),
            "param": str(param.dtype).removeprefix("torch."),
            "grad": str(param.grad.dtype).removeprefix("torch.") if param.grad is not None else "",
            **self.tally.dtypes,
        }
        return float(loss.detach()), dtypes

    def event(self, at: tuple[int, int, int], x: torch.Tensor, y: torch.Tensor) -> PrecisionSharded:
        run, rank, step = at
        loss, dtypes = self.step(x, y)
        got = self.tally.bytes
        return PrecisionSharded(
            run, rank, self.arm.id, step, loss, dtypes, got["gather"], got["reduce"]
        )
