"""A torchrun worker: ``python -m ddp_viz.kinds.resuming.engine.worker FOLDER SPEC_JSON``.

It does what a restartable script does: join the group torchrun set up (``env://``), load
the last checkpoint if there is one, train the remaining steps saving every ``interval``
steps, and, the first time round (``TORCHELASTIC_RESTART_COUNT`` 0), the last rank kills itself
with SIGKILL after step ``kill_after``. It logs each thing it does, one JSON line at a time,
to ``FOLDER/log-<attempt>-<rank>.jsonl`` (flushed: a killed worker's lines are on disk), and
the last attempt's rank 0 writes the final weights to ``FOLDER/final.pt``.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
from pathlib import Path
from typing import IO

from ddp_viz.platform import KILL, die_with_parent, stacks_on_request


def said(exc: BaseException) -> str:
    """gloo's words, without the source file it prefixes them with."""
    text = re.sub(r"^\[[^\]]*\]\s*", "", str(exc).strip())
    return text.splitlines()[0][:300] if text else type(exc).__name__


def log(out: IO[str], **fields: object) -> None:
    out.write(json.dumps(fields) + "\n")
    out.flush()


def join(attempt_keys: bool, attempt: int, rank: int, world: int) -> None:
    """Join the group torchrun set up. Its agent keeps one store for every attempt (the
    rendezvous shares its TCPStore), so the keys gloo's ranks wrote the last time, their
    addresses among them, are still there: a rank that reads a peer's old address before
    the peer writes its new one connects to a process that is gone ("connectFullMesh …
    Connection refused"). Keys under a prefix of the attempt's own start empty."""
    import torch.distributed as dist

    # listing: restart-join
    if attempt_keys:
        host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
        store = dist.TCPStore(host, port, world, is_master=False)
        store = dist.PrefixStore(f"attempt-{attempt}", store)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    else:
        dist.init_process_group("gloo", init_method="env://")
    # end listing


def main(folder: Path, spec_json: str) -> None:
    # the agent's death ends its workers too, whatever killed it
    die_with_parent(KILL)
    stacks_on_request()  # a run that takes too long is asked where it waits (torchrun.log)
    import torch
    import torch.distributed as dist

    from ddp_viz.kinds.resuming.engine.training import (
        load_checkpoint,
        new_training,
        restore,
        save_checkpoint,
    )
    from ddp_viz.kinds.resuming.spec import RestartSpec

    spec = RestartSpec.from_mapping(json.loads(spec_json))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # listing: restart-attempt
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    # end listing
    with open(folder / f"log-{attempt}-{rank}.jsonl", "w") as out:
        log(out, what="start", pid=os.getpid(), port=int(os.environ["MASTER_PORT"]))
        try:
            join(spec.attempt_keys, attempt, rank, world)
        except Exception as exc:  # gloo's connectFullMesh … Connection refused, say
            log(out, what="error", error=said(exc))
            raise
        t = new_training(spec, rank, world)
        path = folder / "checkpoint.pt"
        # listing: restart-resume
        if path.exists():
            restore(t, load_checkpoint(path, rank))
        # end listing
        log(out, what="resumed", step=t.step)
        try:
            while t.step < spec.total_steps(world):
                t.train_step()
                log(out, what="step", step=t.step)
                if t.step % spec.interval == 0:
                    save_checkpoint(t, path)
                    if rank == 0:
                        log(out, what="saved", step=t.step)
                if attempt == 0 and rank == world - 1 and t.step == spec.kill_after:
                    log(out, what="killed", step=t.step)
                    os.kill(os.getpid(), KILL)
        except Exception as exc:  # the survivors' next collective: "Connection closed by peer"
            log(out, what="error", error=said(exc))
            raise
        if rank == 0:
            torch.save([p.detach() for p in t.model.parameters()], folder / "final.pt")
        dist.barrier()
        log(out, what="finished", step=t.step)
        # DDP's reducer holds the process group too. Freed after destroy_process_group (as
        # main returns), it is the group's last holder and destroys it holding the GIL while
        # it joins gloo's thread, which waits for the GIL to free a finished collective's
        # tensors: a rank that hangs once it is done. Freed first, the group goes inside
        # destroy_process_group, whose binding lets the GIL go.
        del t
        gc.collect()  # DDP's hooks refer back to it
        dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
