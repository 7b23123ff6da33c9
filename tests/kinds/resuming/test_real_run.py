"""The lesson's run for real, in one engine: at 2 ranks to the end, then again stopped while
torchrun's restarted workers run (3 and 4 ranks are checked from their recordings: a 3-rank
restart failed once under the full suite's load, see the issue's note). Expected values are
computed here (the sampler's rows from DistributedSampler itself, the steps from the
scenario), not read from the kind.

Everything the engine makes goes under this test's own TMPDIR, so "nothing left behind" is
checked there: no process naming that folder, no file in it."""

from __future__ import annotations

import math
import time
from pathlib import Path

import psutil
import pytest
import torch

from ddp_viz.client import EngineClient
from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.scenario import Scenario
from tests.app.test_every_lesson import run_headless

pytestmark = [pytest.mark.gloo, pytest.mark.slow]
KIND = "resuming"


def scenario(world: int) -> Scenario:
    raw = load_lesson("when-a-rank-dies").scenario().to_dict()
    return Scenario.from_mapping({**raw, "world_size": world})


def naming(folder: Path) -> list[psutil.Process]:
    """Processes whose command line names ``folder`` (torchrun and its workers do)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if any(str(folder) in part for part in p.info["cmdline"] or []):
            out.append(p)
    return out


def left_behind(tmp: Path) -> list[Path]:
    """What a run left in TMPDIR: its folder, a checkpoint, torchrun's logs (the engine's own
    multiprocessing folder and torch's compile cache are not the run's)."""
    names = ("ddp-viz-run*", "*.pt", "*.tmp", "torchelastic_*", "log-*.jsonl")
    return [p for pattern in names for p in tmp.rglob(pattern)]


def attempt_one(engine: EngineClient, tmp: Path) -> bool:
    """torchrun's attempt 1 has begun (its workers' logs); a run that failed first says why
    at once (a warm rank's second run is where state kept from the first one bites)."""
    while engine.pending:
        e = engine.next_event(0.01)
        assert not isinstance(e, protocol.RunFailed), e
    return any(tmp.rglob("log-1-*.jsonl"))


def wait_until(done, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def sampler_rows(rows: int, world: int, rank: int, epoch: int, batch: int) -> list[int]:
    from torch.utils.data import DistributedSampler

    s = DistributedSampler(range(rows), world, rank, shuffle=True, seed=0)
    s.set_epoch(epoch)
    return list(s)[:batch]


def check_resumes(p, world: int, spec) -> None:
    per_epoch = math.ceil(math.ceil(spec.rows / world) / spec.batch)
    at = spec.resume_epoch * per_epoch
    for rank in range(world):
        e = p.compared[("everything", rank)]
        # at 3+ ranks a fresh DDP's first bucket order can move the last bits (lesson.md)
        assert e.max_diff < 1e-6 if world > 2 else e.max_diff == 0.0, rank
        assert e.rows == e.rows_want == sampler_rows(spec.rows, world, rank, 2, spec.batch)
        assert e.mask_diff == 0 and e.adam_step == e.adam_step_want == at + 1
        for variant in ("no_epoch", "no_rng", "no_optimizer"):
            other = p.compared[(variant, rank)]
            assert other.max_diff > 1e-4 and other.weights != other.weights_want, (variant, rank)
        assert p.compared[("no_epoch", rank)].rows == sampler_rows(
            spec.rows, world, rank, 0, spec.batch
        )
        assert p.compared[("no_optimizer", rank)].adam_step == 1.0
        assert p.loaded[rank].weights == p.saved.weights
    assert sum(p.compared[("no_rng", r)].mask_diff for r in range(world)) > 0


def chunk_rows(rows: int, parts: int, rank: int) -> int:
    """The rows FSDP2 gives ``rank`` of a dim-0 size ``rows``: torch.chunk's, none past the end."""
    chunks = torch.arange(rows).chunk(parts)
    return len(chunks[rank]) if rank < len(chunks) else 0


def check_reshard(p, world: int, spec) -> None:
    """Saved over every rank, loaded over one fewer: each loader holds the rows torch.chunk
    gives it of every parameter, and the parameters it loaded are the saved ones."""
    m = world - 1
    assert sorted(p.reshards) == list(range(world))
    for rank, e in p.reshards.items():
        assert (e.saved_at, e.loaded_at) == (world, m) and e.bytes > 0
        if rank >= m:
            assert e.rows == {} and e.max_diff == -1.0
            continue
        sizes = {"0.weight": spec.hidden, "0.bias": spec.hidden, "3.weight": 1, "3.bias": 1}
        want = {n: chunk_rows(d, m, rank) for n, d in sizes.items()}
        assert e.rows == want, (rank, e.rows, want)
        assert e.max_diff == 0.0 and e.adam_step == 1.0


def zero_shares(numels: dict[str, int], world: int) -> list[list[str]]:
    """ZeRO's split written out from its docs: largest parameter first, each to the rank
    holding the fewest elements so far (the lowest such rank)."""
    shares: list[list[str]] = [[] for _ in range(world)]
    sizes = [0] * world
    for name in sorted(numels, key=lambda n: -numels[n]):  # a stable sort: ties keep order
        rank = sizes.index(min(sizes))
        shares[rank].append(name)
        sizes[rank] += numels[name]
    return shares


def check_zero(p, world: int, spec) -> None:
    """Each rank held Adam's state (two float32 averages a value and a float32 step) of the
    parameters ZeRO gave it; rank 0 gathered all of it, equal to plain Adam's; the others
    were refused."""
    h = spec.hidden
    numels = {"0.weight": 4 * h, "0.bias": h, "3.weight": h, "3.bias": 1}
    shares = zero_shares(numels, world)
    assert sorted(p.zeros) == list(range(world))
    for rank, e in p.zeros.items():
        assert sorted(e.owned) == sorted(shares[rank]), (rank, e.owned, shares[rank])
        assert e.state_bytes == sum(8 * numels[n] + 4 for n in shares[rank])
        assert e.weights_diff == 0.0 and e.world == world
        if rank:
            assert e.refused == "Optimizer state has not been consolidated on this rank"
            assert (e.full_params, e.full_bytes, e.saved_bytes, e.state_diff) == (-1, -1, -1, -1)
    first = p.zeros[0]
    assert first.refused == "" and first.state_diff == 0.0 and first.full_params == 4
    assert first.full_bytes == sum(8 * n + 4 for n in numels.values())
    assert first.saved_bytes > first.full_bytes


def test_zero_at_four_ranks_from_its_recording() -> None:
    """The 4-rank recording (a real run): one parameter to each rank."""
    from ddp_viz.model.timeline import record
    from tests.conftest import load_recording

    p = record(load_recording("resuming-4-ranks.jsonl")).parts[KIND]
    check_zero(p, 4, scenario(4).table(KIND))
    assert [len(p.zeros[r].owned) for r in range(4)] == [1, 1, 1, 1]


def check_restart(p, world: int, spec) -> None:
    o = p.outcome
    attempts = p.attempt_numbers()
    assert o.exit_code == 0 and o.restarts == attempts[-1] >= 1
    killed = [a for a in p.attempts.values() if a.end == "killed"]
    assert [(a.attempt, a.rank, a.last_step) for a in killed] == [(0, world - 1, spec.kill_after)]
    last = p.ranks_of(attempts[-1])
    assert sorted(last) == list(range(world))
    assert all(a.end == "finished" for a in last.values())
    resumed = {a.start_step for a in last.values()}
    assert resumed == {spec.kill_after - spec.kill_after % spec.interval}
    assert o.killed_after - o.resumed_from == spec.kill_after % spec.interval == 2
    # bit for bit at 2 ranks (the recordings); at 3, runs here ended within one float32
    # rounding of the run never stopped (6e-08), cause not found: see lesson.md
    assert 0.0 <= o.max_diff < 1e-6 and o.weights
    assert len({a.store_port for a in p.attempts.values()}) == 1  # one store for every attempt
    assert o.left_behind == 0 and o.sigterms >= 1


@pytest.mark.timeout(600)
def test_two_ranks_to_the_end_then_stopped_mid_restart(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    with EngineClient() as engine:
        # the lesson as `ddp-viz run --lesson … --json` runs it: its lines valid, its verdicts
        # said (this is test_every_lesson's run of this lesson too)
        rec, _ = run_headless("when-a-rank-dies", engine, tmp_path, "--world-size", "2")
        p = rec.parts[KIND]
        spec = scenario(2).table(KIND)
        check_resumes(p, 2, spec)
        check_reshard(p, 2, spec)
        check_zero(p, 2, spec)
        check_restart(p, 2, spec)
        assert not left_behind(tmp_path), left_behind(tmp_path)

        # the second run: stopped once torchrun's restarted workers have begun
        engine.send(protocol.RunCommand(run=2, scenario=scenario(2).to_dict()))
        wait_until(lambda: attempt_one(engine, tmp_path), 300, "no attempt 1")
        assert naming(tmp_path), "no torchrun process while attempt 1 runs"
        engine.send(protocol.CancelCommand(run=2))
        assert engine.wait_for(protocol.RunCancelled, timeout=60).run == 2
        wait_until(lambda: not naming(tmp_path), 30, f"left running: {naming(tmp_path)}")
        # torchrun's workers stop after the rank that ran them: a log they write while they
        # stop is removed by the engine's sweep of the run's folder, not left behind
        wait_until(lambda: not left_behind(tmp_path), 10, f"left: {left_behind(tmp_path)}")
