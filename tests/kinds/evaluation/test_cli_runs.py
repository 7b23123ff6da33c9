"""`ddp-viz run --lesson evaluation --json` at 2, 3 and 4 ranks, for real: every accuracy
against a float64 recomputation from the same rows, the shares against DistributedSampler's
own indices, and the rank-0-only evaluation through the wrapper ending within the lesson's
timeout with gloo's own words, then model.module completing. The three runs go at once (each
CLI starts its own engine: no port is fixed); the suite's fixture fails the test if a process
is left behind."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ddp_viz.kinds.evaluation.record import module_done, repeated, stalled
from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.timeline import RunStatus, record
from tests.kinds.evaluation.checks import check_accuracies, check_padding

pytestmark = pytest.mark.gloo
WORLDS = (2, 3, 4)
# gloo's words: its own timeout, or the connection a peer's timeout closed first
GLOO = ("Timed out waiting", "Connection closed by peer", "Application timeout caused pair closure")


def sampler_indices(rows: int, world: int, shuffle: bool, seed: int) -> list[list[int]]:
    from torch.utils.data import DistributedSampler

    return [list(DistributedSampler(range(rows), world, r, shuffle, seed)) for r in range(world)]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_lesson_at_two_three_and_four_ranks() -> None:
    cmd = [sys.executable, "-m", "ddp_viz", "run", "--lesson", "evaluation", "--json"]
    started = time.monotonic()
    procs = {
        w: subprocess.Popen(
            [*cmd, "--world-size", str(w)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in WORLDS
    }
    outs = {w: p.communicate(timeout=170) for w, p in procs.items()}
    print(f"three CLI runs at once: {time.monotonic() - started:.1f} s")
    spec = load_lesson("evaluation").scenario().table("evaluation")
    for world, (out, err) in outs.items():
        assert procs[world].returncode == 0, (world, err)
        events = [protocol.decode(line) for line in out.splitlines()[1:] if line.strip()]
        rec = record(events)
        p = rec.parts["evaluation"]
        assert rec.status is RunStatus.FINISHED and rec.world_size == world, rec.reason
        check_accuracies(p)
        check_padding(p, spec.eval_rows)
        own = sampler_indices(spec.eval_rows, world, spec.shuffle, spec.seed)
        assert [p.shares[r].indices for r in range(world)] == own, world
        held = [i for share in own for i in share]
        twice = {i for i in held if held.count(i) > 1}
        assert set(repeated(p)) == twice and len(held) - len(set(held)) == -spec.eval_rows % world
        check_hang(p, world, spec.timeout_s)


def check_hang(p, world: int, timeout: float) -> None:
    """Every rank's wait ended by gloo within the lesson's timeout; the heartbeats say where."""
    ended = stalled(p)
    assert set(ended) == set(range(world))
    for rank, o in ended.items():
        assert any(words in o.error for words in GLOO), o.error
        assert o.seconds < timeout + 2.0, (rank, o.seconds)
    assert min(o.seconds for o in ended.values()) >= timeout * 0.95
    frames = p.waits[("wrapper", 0)].where
    assert frames[0].startswith("DistributedDataParallel._distributed_broadcast_coalesced")
    assert any(f.startswith("DistributedDataParallel._sync_buffers") for f in frames)
    for rank in range(1, world):
        assert p.waits[("wrapper", rank)].where[0].startswith("barrier (torch/distributed/")
    assert module_done(p, world)
