"""The 2-rank recording widened to N ranks (pure, no torch): each per-rank event of rank 1
(the last, the one killed) copied for ranks 1 … N−1, the killed one kept last, and a failed
rendezvous attempt put in before the last attempt when asked. The layout tests draw every
rank at 2, 4 and 8 ranks from these; the numbers stay those of the real run."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.event_base import Event
from tests.conftest import load_recording

RUN = "resuming-2-ranks.jsonl"
PER_RANK = {"rank_started", "checkpoint_loaded", "resume_compared", "restart_attempt"}
# the sharded checkpoint: saved at N ranks, loaded at N − 1; rank 0 (a loader) for the others
# that load, rank 1 (the one that does not load, at 2 ranks) for the last; ZeRO's state:
# ranks 0 and 1 keep what they held, the ranks added hold none (as ranks past the parameters'
# count do), so the shares still add up to the state rank 0 gathered


def widened(world: int, failed_attempt: bool = False) -> list[Event]:
    events = load_recording(RUN)
    out: list[Event] = []
    loader = next(e for e in events if e.kind == "reshard_compared" and e.rank == 0)
    for e in events:
        if e.kind == "reshard_compared":
            if e.rank == 0:
                for rank in range(world - 1):
                    out.append(
                        dataclasses.replace(loader, rank=rank, saved_at=world, loaded_at=world - 1)
                    )
            else:
                out.append(
                    dataclasses.replace(e, rank=world - 1, saved_at=world, loaded_at=world - 1)
                )
            continue
        if e.kind == "zero_consolidated":
            out.append(dataclasses.replace(e, world=world))
            if e.rank == 1:
                for rank in range(2, world):
                    none = {"owned": [], "state_bytes": 0}
                    out.append(dataclasses.replace(e, rank=rank, world=world, **none))
            continue
        if e.kind == "run_started":  # rows for as many steps per rank as the real run's
            table = dict(e.scenario["resuming"])
            table["rows"] = table["rows"] * world // 2
            scenario = {**e.scenario, "world_size": world, "resuming": table}
            e = dataclasses.replace(e, world_size=world, scenario=scenario)
        if e.kind in PER_RANK and e.rank == 1:
            for rank in range(1, world):
                killed = getattr(e, "end", "") == "killed" and rank != world - 1
                change = {"rank": rank}
                if killed:  # only the last rank dies; the others are stopped
                    change |= {"end": "stopped"}
                if e.kind == "rank_started":
                    change |= {"pid": e.pid + rank}
                out.append(dataclasses.replace(e, **change))
            continue
        if e.kind == "restart_outcome":
            e = dataclasses.replace(e, killed_rank=world - 1)
        out.append(e)
    return with_failed_attempt(out, world) if failed_attempt else out


def with_failed_attempt(events: list[Event], world: int) -> list[Event]:
    """Attempt 1 fails its rendezvous (gloo's words); the successful attempt becomes 2."""
    out: list[Event] = []
    for e in events:
        if e.kind == "restart_attempt" and e.attempt == 1:
            if e.rank == 0:
                for rank in range(world):
                    out.append(
                        dataclasses.replace(
                            e,
                            rank=rank,
                            attempt=1,
                            start_step=-1,
                            last_step=-1,
                            saved=[],
                            end="failed" if rank == 0 else "stopped",
                            error="Gloo connectFullMesh failed with [/x/pair.cc:152] "
                            "Connection refused"
                            if rank == 0
                            else "",
                        )
                    )
            e = dataclasses.replace(e, attempt=2)
        if e.kind == "restart_outcome":
            e = dataclasses.replace(e, restarts=2, mesh_failures=1)
        out.append(e)
    return out
