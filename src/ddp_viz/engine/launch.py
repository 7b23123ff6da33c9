"""Starting the ranks the way ``torchrun`` starts a script (``[launch] init_method = "env"``):
the variables it sets, and the event that says what each rank read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import torch.distributed as dist

from ddp_viz.model.launchspec import LaunchEnv

LAUNCH_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@contextmanager
def torchrun_env(rank: int, world: int, store: dist.Store) -> Iterator[dict[str, str]]:
    """Set what ``torchrun`` sets for a worker, for ``init_process_group(init_method="env://")``
    to read, and restore the process's environment afterwards (pooled ranks serve other runs).

    As under torchrun, the rendezvous store is hosted outside ``init_process_group`` (there by
    the launcher's agent, here by rank 0 before it starts), on a port the kernel picks, and
    ``TORCHELASTIC_USE_AGENT_STORE=True`` makes every rank a client of it. The port reaches the
    other ranks through the run's private file store.
    """
    agent = None
    if rank == 0:
        agent = dist.TCPStore(
            "127.0.0.1", 0, world, is_master=True, wait_for_workers=False,
            timeout=timedelta(seconds=30),
        )  # fmt: skip
        store.set("master_port", str(agent.port))
    port = store.get("master_port").decode()
    env = {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),  # one machine: the local rank is the rank
        "WORLD_SIZE": str(world),
        "LOCAL_WORLD_SIZE": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": port,
        "TORCHELASTIC_USE_AGENT_STORE": "True",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield {k: env[k] for k in LAUNCH_KEYS}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        del agent


def launch_event(run: int, rank: int, method: str, env: dict[str, str]) -> LaunchEnv:
    return LaunchEnv(run=run, rank=rank, init_method=f"{method}://", env=env)
