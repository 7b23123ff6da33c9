"""Sharded training on real gloo ranks: one model, three ways, in lockstep.

Each way (``replicas``) is its own replica of the same model trained on the same rows; while a
way steps, the collectives torch issues for it are recorded (``recorder``). After every step
the program (not counting its own collectives) measures what each rank holds, and compares the
full parameters of ZeRO and FSDP (``full_tensor()``) and their gradients with plain DDP's.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed.tensor import DTensor

from ddp_viz.engine.outbox import Outbox
from ddp_viz.kinds.sharded.engine.recorder import Call, Recorder, recording
from ddp_viz.kinds.sharded.engine.replicas import (
    DdpReplica,
    FsdpReplica,
    Replica,
    held,
    local,
)
from ddp_viz.kinds.sharded.events import ShardedCollective, ShardedStep
from ddp_viz.kinds.sharded.model import FEATURES, KIND, OUT, ShardedSpec, Way, layer_of
from ddp_viz.model.scenario import Scenario

ROWS = 2048  # the data set's rows; each step takes the next batch × world of them


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


def train_step(replica: Replica, rec: Recorder, x: torch.Tensor, y: torch.Tensor) -> float:
    rec.begin(replica.way)
    rec.sampler = replica.sample if isinstance(replica, FsdpReplica) else None
    if isinstance(replica, FsdpReplica):
        replica.peak, replica.peak_at = 0, ""
    # listing: sharded-step
    replica.opt.zero_grad()
    loss = F.mse_loss(replica.model(x), y)
    rec.phase = "backward"
    loss.backward()
    rec.phase = "step"
    replica.opt.step()
    # end listing
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
        assert p.grad is not None
        grad = local(p.grad)
        first, rows = owned[name] if replica.way is Way.FSDP else (0, grad.shape[0])
        want = ddp[name].grad[first : first + rows]
        if grad.numel():
            g_diff = max(g_diff, float((grad - want).abs().max()))
    return p_diff, g_diff


def step_event(
    replica: Replica,
    ids: tuple[int, int, int],
    loss: float,
    ddp: dict[str, nn.Parameter],
    world: int,
) -> ShardedStep:
    """What this rank holds after the step of ``replica``, and how far it is from DDP."""
    run, rank, step = ids
    p_diff, g_diff = compare(replica, ddp, rank, world)
    sizes = held(list(replica.named().values()), replica.state())
    gathered, at = replica.gathered()
    return ShardedStep(
        run=run,
        rank=rank,
        way=replica.way.value,
        step=step,
        loss=loss,
        params=sizes["params"],
        grads=sizes["grads"],
        state=sizes["state"],
        gathered=gathered,
        gathered_at=at,
        owned=replica.owned(rank, world),
        param_diff=p_diff,
        grad_diff=g_diff,
    )


def collective_events(
    way: Way, ids: tuple[int, int, int], calls: list[Call]
) -> list[ShardedCollective]:
    """The collectives of the step, in the order the rank issued them."""
    run, rank, step = ids
    out: list[ShardedCollective] = []
    for seq, c in enumerate(calls):
        layers = {layer_of(n) for n in c.tensors}
        out.append(
            ShardedCollective(
                run=run,
                rank=rank,
                way=way.value,
                step=step,
                seq=seq,
                op=c.op,
                phase=c.phase,
                layer=layers.pop() if len(layers) == 1 else "",
                tensors=c.tensors,
                bytes_in=c.bytes_in,
                bytes_out=c.bytes_out,
                start=c.start,
                end=max(c.end, c.start),
                src=c.src,
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
                ids = (run, rank, step)
                outbox.add(step_event(replica, ids, loss, ddp, world))
                outbox.add(*collective_events(replica.way, ids, calls))
    outbox.flush()
    return spec.steps


PROGRAM = run_sharded
