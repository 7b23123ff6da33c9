"""What one rank does in one run: gloo process group, then DDP training or a kind's program.

The rank's local gradient and the averaged gradient are read *inside* DDP's backward: a comm
hook copies each bucket, does what PyTorch's Python ``allreduce_hook`` does (divide by the world
size, ``all_reduce``) and reads the result from that all-reduce's future. It is the step's only
all-reduce. A long run copies and sends the tensors at some steps only (``values_due``); its
loss, buckets and timings at every step. The loop itself is :mod:`ddp_viz.engine.trainer`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch.distributed as dist

from ddp_viz.engine.data import first_epoch_rows
from ddp_viz.engine.kind_parts import TrainingHooks, kind_hooks, kind_program, set_run_folder
from ddp_viz.engine.launch import launch_event, torchrun_env
from ddp_viz.engine.outbox import Outbox
from ddp_viz.engine.trainer import RankFault, Trainer
from ddp_viz.model import protocol
from ddp_viz.model.scenario import Scenario

Send = Callable[[dict[str, Any]], None]
PG_TIMEOUT = timedelta(seconds=60)

__all__ = ["PG_TIMEOUT", "RankFault", "run_rank"]


def run_rank(job: dict[str, Any], send: Send) -> None:
    """Train ``job["scenario"]`` as rank ``job["rank"]``; report through ``send``.

    Sends protocol events as dicts plus control messages ``{"ctl": ...}`` for the launcher:
    ``diverged`` and ``done``.
    """
    scenario = Scenario.from_mapping(job["scenario"])
    run, rank, world = int(job["run"]), int(job["rank"]), scenario.world_size
    hooks = kind_hooks(run, rank, scenario)
    send = hooks.send(send)
    rows = first_epoch_rows(scenario, rank) if scenario.trains else []
    done: list[dict[str, Any]] = []

    def send_until_done(message: dict[str, Any]) -> None:
        # "done" waits until this rank has let go of the run's file store: the engine removes
        # the store's folder once every rank is done, and a FileStore released after that
        # retried opening its vanished file for minutes, holding the rank from the next run
        # (about one env:// run in twenty, whose store is released later than file://'s)
        if message.get("ctl") == "done":
            done.append(message)
        else:
            send(message)

    outbox = Outbox(send_until_done)
    outbox.add(protocol.RankStarted(run=run, rank=rank, pid=os.getpid(), rows=rows), now=True)

    # A FileStore in a private per-run folder: no store port to choose, relay or lose, and no
    # TCP connect to the store (TCPStore clients here stalled for 5 s in ~4% of runs). gloo's
    # own connections between ranks bind free loopback ports chosen by the kernel.
    store = dist.FileStore(str(job["store"]), world)
    timeout = hooks.timeout or PG_TIMEOUT
    with ExitStack() as launched:
        if scenario.launch.init_method == "env":  # as torchrun starts a script
            env = launched.enter_context(torchrun_env(rank, world, store))
            # listing: launch-env
            dist.init_process_group("gloo", init_method="env://", timeout=timeout)
            # end listing
            outbox.add(launch_event(run, rank, "env", env), now=True)
        else:
            # listing: launch-store
            dist.init_process_group(
                "gloo", store=store, rank=rank, world_size=world, timeout=timeout
            )
            # end listing
        _run(run, rank, scenario, job.get("fault") or {}, outbox, hooks, send, job)
    del store
    for message in done:
        send(message)


def _run(
    run: int,
    rank: int,
    scenario: Scenario,
    fault: dict,
    outbox: Outbox,
    hooks: TrainingHooks,
    send: Send,
    job: dict[str, Any],
) -> None:
    try:
        try:
            program = kind_program(scenario)
            set_run_folder(Path(job["store"]).parent)
            if program is not None:  # a kind of run that owns the whole program
                steps = program(run, rank, scenario, outbox)
                outbox.control({"ctl": "done", "steps": steps})
                return
            with hooks.around_run(send):
                trainer = None
                try:
                    folder = Path(job["store"]).parent
                    trainer = Trainer(run, rank, scenario, outbox, hooks, folder)
                    completed = trainer.train(fault)
                    # DDP goes while the group is still registered (see Trainer.release); after
                    # an error the rank reports first, so a peer that loses its connection is
                    # not the one blamed
                    trainer.release()
                except RankFault:
                    raise
                except RuntimeError as exc:  # the lesson's outcome, if a kind says so
                    if not hooks.on_error(exc, outbox):
                        raise
                    if trainer is not None:  # a stall: reported, so DDP can go now
                        trainer.release()
                    return
                outbox.control({"ctl": "done", "steps": completed})
        finally:
            outbox.flush()  # what happened before an error reaches the window
    finally:
        # listing: destroy
        dist.destroy_process_group()
        # end listing
