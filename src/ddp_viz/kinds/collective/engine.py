"""The all-reduce itself, on real gloo ranks: naive and ring by hand, and ``dist.all_reduce``.

Both hand-made algorithms move real tensors with point-to-point ``dist.isend`` / ``dist.recv``
between the ranks' processes, so every chunk's trip is a send this rank made and an event it
reports; ``dist.all_reduce`` on the same vector is the reference both must equal bit for bit.
The vectors hold whole numbers: float32 adds them exactly in any order, so "equal" means the
algorithm is right, not that the additions happened in the same order.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from ddp_viz.engine.outbox import Outbox
from ddp_viz.engine.tensors import encode
from ddp_viz.kinds.collective.events import (
    CollectiveInput,
    CollectiveResult,
    CollectiveTiming,
    NaiveStep,
    RingStep,
)
from ddp_viz.kinds.collective.model import (
    ALGORITHMS,
    BYTES_PER_VALUE,
    REDUCE_SCATTER,
    Move,
    chunk_bounds,
    ring_move,
    ring_steps,
)
from ddp_viz.model.scenario import Scenario

OnRing = Callable[[int, Move, int, int, torch.Tensor, float, float], None]
OnNaive = Callable[[int, list[int], list[int], int, int, float, float], None]


def vector(seed: int, rank: int, length: int) -> torch.Tensor:
    """Rank ``rank``'s vector: whole numbers from −9 to 9, as float32."""
    g = torch.Generator().manual_seed(seed * 1009 + rank)
    return torch.randint(-9, 10, (length,), generator=g).to(torch.float32)


def _bytes(t: torch.Tensor) -> int:
    return t.numel() * BYTES_PER_VALUE


def ring_allreduce(
    x: torch.Tensor, rank: int, world: int, on_step: OnRing | None = None
) -> tuple[torch.Tensor, int, int]:
    """Reduce-scatter then all-gather over the ring; returns (sum, bytes sent, received)."""
    # listing: ring
    out = x.clone()
    chunks = list(torch.tensor_split(out, world))  # views into ``out``
    sent = received = 0
    for step in range(ring_steps(world)):
        move = ring_move(step, rank, world)
        incoming = torch.empty_like(chunks[move.receive])
        t0 = time.monotonic()
        request = dist.isend(chunks[move.send], move.to)  # both directions at once: no deadlock
        dist.recv(incoming, move.source)
        request.wait()
        if move.phase == REDUCE_SCATTER:
            chunks[move.receive] += incoming
        else:
            chunks[move.receive].copy_(incoming)
        # end listing
        t1 = time.monotonic()
        sent += _bytes(chunks[move.send])
        received += _bytes(incoming)
        if on_step is not None:
            on_step(
                step,
                move,
                _bytes(chunks[move.send]),
                _bytes(incoming),
                chunks[move.receive],
                t0,
                t1,
            )
    return out, sent, received


def naive_allreduce(
    x: torch.Tensor, rank: int, world: int, on_step: OnNaive | None = None
) -> tuple[torch.Tensor, int, int]:
    """Everyone sends to rank 0, which adds and sends the sum back to everyone."""
    others = list(range(1, world))
    sent = received = 0  # counted send by send, as they happen
    t0 = time.monotonic()
    if rank == 0:
        total = x.clone()
        for r in others:
            incoming = torch.empty_like(x)
            dist.recv(incoming, r)
            received += _bytes(incoming)
            total += incoming
        t1 = time.monotonic()
        if on_step is not None:
            on_step(0, [], others, 0, received, t0, t1)
        for r in others:
            dist.send(total, r)
            sent += _bytes(total)
        if on_step is not None:
            on_step(1, others, [], sent, 0, t1, time.monotonic())
        return total, sent, received
    dist.send(x, 0)
    sent += _bytes(x)
    t1 = time.monotonic()
    if on_step is not None:
        on_step(0, [0], [], sent, 0, t0, t1)
    total = torch.empty_like(x)
    dist.recv(total, 0)
    received += _bytes(total)
    if on_step is not None:
        on_step(1, [], [0], 0, received, t1, time.monotonic())
    return total, sent, received


def _library(x: torch.Tensor, rank: int, world: int) -> tuple[torch.Tensor, int, int]:
    out = x.clone()
    dist.all_reduce(out)  # gloo's own algorithm: its bytes are not ours to count
    return out, 0, 0


RUNNERS = {"naive": naive_allreduce, "ring": ring_allreduce, "all_reduce": _library}


def run_collectives(run: int, rank: int, scenario: Scenario, outbox: Outbox) -> int:
    """The lesson's run: the three algorithms on this rank's vector, then the timing sweep.
    Returns the ring's step count (the run's steps)."""
    spec = scenario.table("collective")
    assert spec is not None
    world = scenario.world_size
    x = vector(spec.seed, rank, spec.length)
    bounds = [list(b) for b in chunk_bounds(spec.length, world)]
    heads = [x[a : min(b, a + 8)].tolist() for a, b in bounds]
    outbox.add(CollectiveInput(run, rank, encode(x), bounds, heads), now=True)

    def ring_step(step: int, move: Move, out: int, got: int, chunk: Any, t0: float, t1: float):
        outbox.add(
            RingStep(
                run,
                step,
                rank,
                move.phase,
                move.send,
                move.to,
                move.receive,
                move.source,
                out,
                got,
                encode(chunk),
                t0,
                t1,
            )
        )

    def naive_step(step: int, to: list, frm: list, out: int, got: int, t0: float, t1: float):
        outbox.add(NaiveStep(run, step, rank, to, frm, out, got, t0, t1))

    t0 = time.monotonic()
    reference, _, _ = _library(x, rank, world)
    results = {"all_reduce": (reference, 0, 0, time.monotonic() - t0)}
    for algo, watch in (("ring", ring_step), ("naive", naive_step)):
        dist.barrier()
        t0 = time.monotonic()
        out, sent, got = RUNNERS[algo](x, rank, world, watch)  # type: ignore[operator]
        results[algo] = (out, sent, got, time.monotonic() - t0)
    for algo in ALGORITHMS:
        out, sent, got, seconds = results[algo]
        equal = bool(torch.equal(out, reference))
        outbox.add(CollectiveResult(run, rank, algo, encode(out), equal, sent, got, seconds))
    outbox.flush()
    for length in spec.sweep:
        _time_length(run, rank, world, spec.seed, length, spec.repeats, outbox)
    return ring_steps(world)


def _time_length(
    run: int, rank: int, world: int, seed: int, length: int, repeats: int, outbox: Outbox
) -> None:
    """Every algorithm on one vector length, ``repeats`` times; rank 0 reports the median of
    the slowest rank's times (an all-reduce is as slow as its slowest rank)."""
    x = vector(seed, rank, length)
    for algo in ALGORITHMS:
        times = []
        RUNNERS[algo](x, rank, world)  # type: ignore[operator]  # warm-up, not timed
        for _ in range(repeats):
            dist.barrier()
            t0 = time.monotonic()
            RUNNERS[algo](x, rank, world)  # type: ignore[operator]
            slowest = torch.tensor([time.monotonic() - t0], dtype=torch.float64)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            times.append(float(slowest))
        if rank == 0:
            outbox.add(CollectiveTiming(run, algo, length, statistics.median(times), repeats))
    outbox.flush()


PROGRAM = run_collectives
