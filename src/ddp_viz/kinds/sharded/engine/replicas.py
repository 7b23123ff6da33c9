"""The three ways, each its own replica of the same model (same seed, so the same first
weights): plain ``DistributedDataParallel`` with Adam; the same DDP with
``ZeroRedundancyOptimizer(optimizer_class=Adam)``; and FSDP2, ``fully_shard`` on every Linear
and then on the root, with Adam over the sharded parameters (DTensors). Each says what it
holds, counted from its tensors (a DTensor's local shard), and which rows it owns."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.kinds.sharded.engine.recorder import Recorder, size_of
from ddp_viz.kinds.sharded.model import FEATURES, LAYERS, OUT, ShardedSpec, Way

# an optimizer's state: per parameter, its named tensors (and Adam's ``step``)
OptState = Mapping[torch.Tensor, Mapping[str, object]]


def build_model(spec: ShardedSpec) -> nn.Sequential:
    # listing: sharded-model
    torch.manual_seed(spec.seed)
    w = spec.width
    layers: list[tuple[str, nn.Module]] = [("inp", nn.Linear(FEATURES, w)), ("act1", nn.Tanh())]
    layers += [("hidden", nn.Linear(w, w)), ("act2", nn.Tanh()), ("out", nn.Linear(w, OUT))]
    return nn.Sequential(OrderedDict(layers))
    # end listing


def local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t


def held(params: list[nn.Parameter], state: OptState) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer state, from the tensors (local shards)."""
    return {
        "params": sum(size_of(local(p)) for p in params),
        "grads": sum(size_of(local(p.grad)) for p in params if p.grad is not None),
        "state": sum(
            size_of(local(v))
            for s in state.values()
            for v in s.values()
            if isinstance(v, torch.Tensor)
        ),
    }


class Replica:
    """One way: its model, its optimizer, and what it owns."""

    way: Way
    model: nn.Module
    opt: torch.optim.Optimizer

    def named(self) -> dict[str, nn.Parameter]:
        module = self.model.module if isinstance(self.model, DDP) else self.model
        return dict(module.named_parameters())

    def state(self) -> OptState:
        opt = self.opt.optim if isinstance(self.opt, ZeroRedundancyOptimizer) else self.opt
        return opt.state

    def owned(self, rank: int, world: int) -> dict[str, list[int]]:
        return {n: [0, p.shape[0]] for n, p in self.named().items()}

    def gathered(self) -> tuple[int, str]:
        return 0, ""


class DdpReplica(Replica):
    def __init__(self, spec: ShardedSpec, rec: Recorder, zero: bool) -> None:
        self.way, self.rec = (Way.ZERO if zero else Way.DDP), rec
        # listing: sharded-ddp
        model = build_model(spec)
        names = {id(p): n for n, p in model.named_parameters()}
        self.model = DDP(model)
        # end listing

        def hook(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
            rec.bucket = [names[id(p)] for p in bucket.parameters()]
            return default_hooks.allreduce_hook(state, bucket)  # type: ignore[arg-type]

        # DDP checks a hook's annotations against real classes: a plain function, unannotated
        self.model.register_comm_hook(None, lambda state, bucket: hook(state, bucket))
        # listing: sharded-zero
        if zero:
            self.opt = ZeroRedundancyOptimizer(
                self.model.parameters(), optimizer_class=torch.optim.Adam, lr=spec.lr
            )
            rec.names.update({p.data_ptr(): n for n, p in model.named_parameters()})
        else:
            self.opt = torch.optim.Adam(self.model.parameters(), lr=spec.lr)
        # end listing

    def owned(self, rank: int, world: int) -> dict[str, list[int]]:
        if not isinstance(self.opt, ZeroRedundancyOptimizer):
            return super().owned(rank, world)
        mine = {id(p) for g in self.opt.optim.param_groups for p in g["params"]}
        return {n: [0, p.shape[0] if id(p) in mine else 0] for n, p in self.named().items()}


class FsdpReplica(Replica):
    def __init__(self, spec: ShardedSpec, rec: Recorder, world: int) -> None:
        self.way, self.rec = Way.FSDP, rec
        # listing: sharded-fsdp
        model = build_model(spec)
        mesh = init_device_mesh("cpu", (world,))
        for layer in LAYERS:
            fully_shard(getattr(model, layer), mesh=mesh)
        fully_shard(model, mesh=mesh)
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
        # end listing
        self.peak, self.peak_at = 0, ""
        for layer in LAYERS:  # after FSDP's own pre-forward hook: the layer is gathered
            getattr(model, layer).register_forward_pre_hook(
                lambda *_, name=layer: self.sample(f"forward of {name}")
            )

    def unsharded(self) -> int:
        """Bytes of whole parameters this rank holds now: each layer's unsharded tensors
        (FSDP frees their storage when it reshards) and a pending all-gather's flat output."""
        total = 0
        for layer in LAYERS:
            group = getattr(self.model, layer)._get_fsdp_state()._fsdp_param_group
            pending = group._all_gather_result
            if pending is not None:
                total += pending.all_gather_output.untyped_storage().nbytes()
            for fp in group.fsdp_params:
                total += sum(t.untyped_storage().nbytes() for t in fp.all_gather_outputs)
        return total

    def sample(self, where: str, extra: int = 0) -> None:
        if self.rec.way is not Way.FSDP:
            return
        now = self.unsharded() + extra
        if now > self.peak:
            self.peak, self.peak_at = now, where

    def gathered(self) -> tuple[int, str]:
        return self.peak, self.peak_at

    def owned(self, rank: int, world: int) -> dict[str, list[int]]:
        out = {}
        for n, p in self.named().items():
            rows = local(p).shape[0]
            c = -(-p.shape[0] // world)
            out[n] = [min(rank * c, p.shape[0]), rows]
        return out
