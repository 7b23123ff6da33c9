"""Sharded training on real gloo ranks: one model, three ways, in lockstep.

Each way is its own replica of the same model (same seed, so the same first weights) trained
on the same rows: plain ``DistributedDataParallel`` with Adam; the same DDP with
``ZeroRedundancyOptimizer(optimizer_class=Adam)``; and FSDP2, ``fully_shard`` on every Linear
and then on the root, with Adam over the sharded parameters (DTensors).

The collectives are observed where torch issues them: while a way steps, the rank's
``torch.distributed.all_reduce``, ``broadcast``, ``all_gather_single`` and
``reduce_scatter_single`` are wrapped (FSDP2's ``DefaultAllGather`` and
``DefaultReduceScatter`` call the last two through the module, ZeRO's ``_sync_params``
broadcasts each parameter from its owner, DDP's comm hook here is PyTorch's own
``allreduce_hook``). A wrapper notes the tensors, the bytes, and when the call started and
ended (an asynchronous one ends when its work completes). FSDP's parameters in a call are read
from the ``fsdp_params`` its own functions hold on the stack.

After every step the program (not counting its own collectives) measures what each rank
holds, and compares the full parameters of ZeRO and FSDP (``full_tensor()``) and their
gradients with plain DDP's.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP

from ddp_viz.engine.outbox import Outbox
from ddp_viz.kinds.sharded.events import ShardedCollective, ShardedStep
from ddp_viz.kinds.sharded.model import FEATURES, KIND, LAYERS, OUT, ShardedSpec, Way, layer_of
from ddp_viz.model.scenario import Scenario

ROWS = 2048  # the data set's rows; each step takes the next batch × world of them
WRAPPED = {  # torch.distributed's function: the op's word
    "all_reduce": "all_reduce",
    "broadcast": "broadcast",
    "all_gather_single": "all_gather",
    "reduce_scatter_single": "reduce_scatter",
}


@dataclass
class Call:
    op: str
    phase: str
    tensors: list[str]
    bytes_in: int
    bytes_out: int
    start: float
    end: float = -1.0
    src: int = -1


class Recorder:
    """The collectives of the way that is stepping (none while ``way`` is None)."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.lock = threading.Lock()
        self.way: Way | None = None
        self.phase = "forward"
        self.calls: list[Call] = []
        self.t0 = 0.0
        self.bucket: list[str] = []  # the names in DDP's bucket being all-reduced
        self.names: dict[int, str] = {}  # data_ptr → name, for ZeRO's broadcasts
        self.sampler: Callable[[str, int], None] | None = None  # FSDP's gathered bytes

    def begin(self, way: Way) -> None:
        self.way, self.calls, self.phase, self.t0 = way, [], "forward", time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.t0

    @contextmanager
    def paused(self) -> Iterator[None]:
        way, self.way = self.way, None
        try:
            yield
        finally:
            self.way = way

    def names_of(self, op: str, tensor: torch.Tensor) -> list[str]:
        if op == "all_reduce":
            return list(self.bucket)
        if op == "broadcast":
            return [self.names.get(tensor.data_ptr(), "?")]
        frame = sys._getframe(3)
        while frame is not None:  # FSDP's foreach_all_gather / foreach_reduce hold them
            params = frame.f_locals.get("fsdp_params")
            if params is not None:
                return [p._param_fqn for p in params]
            frame = frame.f_back
        return ["?"]


def _size(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _wrapper(rec: Recorder, name: str, original: Any) -> Any:
    op = WRAPPED[name]
    signature = inspect.signature(original)

    def call(*args: Any, **kwargs: Any) -> Any:
        if rec.way is None:
            return original(*args, **kwargs)
        a = signature.bind(*args, **kwargs).arguments
        if op in ("all_gather", "reduce_scatter"):
            inp = a.get("input_tensor", a.get("input"))
            out = a.get("output_tensor", a.get("output"))
            sizes, tensor, src = (_size(inp), _size(out)), inp, -1
        else:
            tensor = a["tensor"]
            src = int(a.get("src", -1)) if op == "broadcast" else -1
            n = _size(tensor)
            sizes = (n, n) if op == "all_reduce" else (n * (src == rec.rank), n * (src != rec.rank))
        entry = Call(op, rec.phase, rec.names_of(op, tensor), *sizes, rec.now(), src=src)
        if rec.sampler is not None and op == "all_gather":  # its output is being filled
            layer = layer_of(entry.tensors[0])
            rec.sampler(f"{rec.phase}, all-gathering {layer}", sizes[1])
        with rec.lock:
            rec.calls.append(entry)
        result = original(*args, **kwargs)
        if a.get("async_op") and result is not None:

            def done(_: Any) -> None:
                with rec.lock:
                    entry.end = rec.now()

            result.get_future().add_done_callback(done)
        else:
            entry.end = rec.now()
        return result

    return call


@contextmanager
def recording(rec: Recorder) -> Iterator[Recorder]:
    originals = {name: getattr(dist, name) for name in WRAPPED}
    for name, original in originals.items():
        setattr(dist, name, _wrapper(rec, name, original))
    try:
        yield rec
    finally:
        for name, original in originals.items():
            setattr(dist, name, original)


def build_model(spec: ShardedSpec) -> nn.Module:
    torch.manual_seed(spec.seed)
    w = spec.width
    layers = [("inp", nn.Linear(FEATURES, w)), ("act1", nn.Tanh())]
    layers += [("hidden", nn.Linear(w, w)), ("act2", nn.Tanh()), ("out", nn.Linear(w, OUT))]
    return nn.Sequential(OrderedDict(layers))


def dataset(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of a smooth target: y = tanh(x A) B, A 16 × 8, B 8 × 8."""
    g = torch.Generator().manual_seed(seed * 7919 + 3)
    x = torch.randn(ROWS, FEATURES, generator=g)
    a = torch.randn(FEATURES, 8, generator=g) / 2
    b = torch.randn(8, OUT, generator=g)
    return x, torch.tanh(x @ a) @ b


def batch_rows(step: int, rank: int, world: int, size: int) -> torch.Tensor:
    start = (step * world + rank) * size
    return torch.arange(start, start + size) % ROWS


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t


def held(params: list[nn.Parameter], state: dict[Any, dict[str, Any]]) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer state, from the tensors (local shards)."""
    return {
        "params": sum(_size(_local(p)) for p in params),
        "grads": sum(_size(_local(p.grad)) for p in params if p.grad is not None),
        "state": sum(
            _size(_local(v)) for s in state.values() for v in s.values() if torch.is_tensor(v)
        ),
    }


class Replica:
    """One way: its model, its optimizer, and what it owns."""

    way: Way
    model: nn.Module
    opt: Any

    def named(self) -> dict[str, nn.Parameter]:
        module = self.model.module if isinstance(self.model, DDP) else self.model
        return dict(module.named_parameters())

    def state(self) -> dict[Any, dict[str, Any]]:
        return (
            self.opt.optim.state
            if isinstance(self.opt, ZeroRedundancyOptimizer)
            else self.opt.state
        )

    def owned(self, rank: int, world: int) -> dict[str, list[int]]:
        return {n: [0, p.shape[0]] for n, p in self.named().items()}

    def gathered(self) -> tuple[int, str]:
        return 0, ""


class DdpReplica(Replica):
    def __init__(self, spec: ShardedSpec, rec: Recorder, zero: bool) -> None:
        self.way, self.rec = (Way.ZERO if zero else Way.DDP), rec
        model = build_model(spec)
        names = {id(p): n for n, p in model.named_parameters()}
        self.model = DDP(model)

        def hook(state: Any, bucket: Any) -> Any:
            rec.bucket = [names[id(p)] for p in bucket.parameters()]
            return default_hooks.allreduce_hook(state, bucket)

        # DDP checks a hook's annotations against real classes: a plain function, unannotated
        self.model.register_comm_hook(None, lambda state, bucket: hook(state, bucket))
        if zero:
            self.opt = ZeroRedundancyOptimizer(
                self.model.parameters(), optimizer_class=torch.optim.Adam, lr=spec.lr
            )
            rec.names.update({p.data_ptr(): n for n, p in model.named_parameters()})
        else:
            self.opt = torch.optim.Adam(self.model.parameters(), lr=spec.lr)

    def owned(self, rank: int, world: int) -> dict[str, list[int]]:
        if self.way is Way.DDP:
            return super().owned(rank, world)
        mine = {id(p) for g in self.opt.optim.param_groups for p in g["params"]}
        return {n: [0, p.shape[0] if id(p) in mine else 0] for n, p in self.named().items()}


class FsdpReplica(Replica):
    def __init__(self, spec: ShardedSpec, rec: Recorder, world: int) -> None:
        self.way, self.rec = Way.FSDP, rec
        model = build_model(spec)
        mesh = init_device_mesh("cpu", (world,))
        for layer in LAYERS:
            fully_shard(getattr(model, layer), mesh=mesh)
        fully_shard(model, mesh=mesh)
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
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
            rows = _local(p).shape[0]
            c = -(-p.shape[0] // world)
            out[n] = [min(rank * c, p.shape[0]), rows]
        return out


def train_step(replica: Replica, rec: Recorder, x: torch.Tensor, y: torch.Tensor) -> float:
    rec.begin(replica.way)
    rec.sampler = replica.sample if isinstance(replica, FsdpReplica) else None
    if isinstance(replica, FsdpReplica):
        replica.peak, replica.peak_at = 0, ""
    replica.opt.zero_grad()
    loss = F.mse_loss(replica.model(x), y)
    rec.phase = "backward"
    loss.backward()
    rec.phase = "step"
    replica.opt.step()
    rec.way = None
    return float(loss.detach())


def compare(
    replica: Replica, ddp: dict[str, nn.Parameter], rank: int, world: int
) -> tuple[float, float]:
    """Largest |p − p_DDP| over the full parameters, and the largest difference between the
    gradient this rank holds and the matching rows of DDP's averaged gradient."""
    if replica.way is Way.DDP:
        return 0.0, 0.0
    owned = replica.owned(rank, world)
    p_diff = g_diff = 0.0
    for name, p in replica.named().items():
        full = p.full_tensor() if isinstance(p, DTensor) else p
        p_diff = max(p_diff, float((full.detach() - ddp[name].detach()).abs().max()))
        grad = _local(p.grad)
        first, rows = owned[name] if replica.way is Way.FSDP else (0, grad.shape[0])
        want = ddp[name].grad[first : first + rows]
        if grad.numel():
            g_diff = max(g_diff, float((grad - want).abs().max()))
    return p_diff, g_diff


def report(
    replica: Replica,
    rec: Recorder,
    ids: tuple[int, int, int],
    loss: float,
    calls: list[Call],
    ddp: dict[str, nn.Parameter],
    world: int,
) -> list[Any]:
    run, rank, step = ids
    p_diff, g_diff = compare(replica, ddp, rank, world)
    sizes = held(list(replica.named().values()), replica.state())
    gathered, at = replica.gathered()
    way = replica.way.value
    out: list[Any] = [
        ShardedStep(
            run,
            rank,
            way,
            step,
            loss,
            sizes["params"],
            sizes["grads"],
            sizes["state"],
            gathered,
            at,
            replica.owned(rank, world),
            p_diff,
            g_diff,
        )
    ]
    for seq, c in enumerate(calls):
        layers = {layer_of(n) for n in c.tensors}
        layer = layers.pop() if len(layers) == 1 else ""
        out.append(
            ShardedCollective(
                run,
                rank,
                way,
                step,
                seq,
                c.op,
                c.phase,
                layer,
                c.tensors,
                c.bytes_in,
                c.bytes_out,
                c.start,
                max(c.end, c.start),
                c.src,
            )
        )
    return out


def run_sharded(run: int, rank: int, scenario: Scenario, outbox: Outbox) -> int:
    """The lesson's run: every way, step by step; returns the steps."""
    spec = scenario.table(KIND)
    assert isinstance(spec, ShardedSpec)
    world = scenario.world_size
    x, y = dataset(spec.seed)
    rec = Recorder(rank)
    with recording(rec):
        replicas: list[Replica] = [
            DdpReplica(spec, rec, zero=False),
            DdpReplica(spec, rec, zero=True),
            FsdpReplica(spec, rec, world),
        ]
        for step in range(spec.steps):
            rows = batch_rows(step, rank, world, spec.batch)
            done = []
            for replica in replicas:
                loss = train_step(replica, rec, x[rows], y[rows])
                with rec.lock:
                    done.append((replica, loss, list(rec.calls)))
            ddp = replicas[0].named()
            for replica, loss, calls in done:
                outbox.add(*report(replica, rec, (run, rank, step), loss, calls, ddp, world))
    outbox.flush()
    return spec.steps


PROGRAM = run_sharded
