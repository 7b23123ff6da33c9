"""The warm rank pool: reuse, resizing, replacement (real processes, no timings asserted)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from ddp_viz.client import EngineClient
from ddp_viz.model import protocol
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.timeline import RunStatus, record

pytestmark = pytest.mark.gloo


def ready_workers(client: EngineClient, n: int, timeout: float = 60) -> dict[int, int]:
    """Read worker_state events until ``n`` workers are ready; slot -> pid."""
    ready: dict[int, int] = {}
    while len(ready) < n:
        e = client.wait_for(protocol.WorkerState, timeout=timeout)
        if e.state == protocol.WorkerStatus.READY:
            ready[e.slot] = e.pid
        elif e.state == protocol.WorkerStatus.EXITED:
            ready.pop(e.slot, None)
    return ready


def test_ranks_stay_warm_between_runs_and_the_pool_follows_the_world_size() -> None:
    with EngineClient() as client:
        first = ready_workers(client, 2)
        a = record(client.run(default_scenario()))
        b = record(client.run(default_scenario().with_changes(lr=0.05)))
        assert set(a.pids.values()) == set(b.pids.values()) == set(first.values())
        assert b.steps[0].ranks[0].params["weight"][0] == pytest.approx(0.5 + 0.05 * 27.5)
        four = record(client.run(default_scenario().with_changes(world_size=4)))
        assert four.status is RunStatus.FINISHED and len(set(four.pids.values())) == 4
        assert set(first.values()) <= set(four.pids.values())  # grown, not replaced
        client.send(protocol.WarmCommand(world_size=2))
        exited = set()
        while len(exited) < 2:
            e = client.wait_for(protocol.WorkerState, timeout=30)
            if e.state == protocol.WorkerStatus.EXITED:
                exited.add(e.pid)
        assert exited <= set(four.pids.values()) and not exited & set(first.values())


@pytest.mark.posix_signals
def test_a_dead_idle_worker_is_replaced() -> None:
    with EngineClient() as client:
        pids = ready_workers(client, 2)
        victim = next(iter(pids.values()))
        os.kill(victim, signal.SIGKILL)
        while True:
            e = client.wait_for(protocol.WorkerState, timeout=30)
            if e.state == protocol.WorkerStatus.EXITED:
                assert e.pid == victim and "SIGKILL" in e.detail
                break
        replacement = client.wait_for(protocol.WorkerState, timeout=60)
        assert replacement.pid != victim
        rec = record(client.run(default_scenario()))
        assert rec.status is RunStatus.FINISHED and victim not in rec.pids.values()


@pytest.mark.slow
def test_bench_runs_and_reports_json() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "ddp_viz", "bench", "--quick", "--only", "warm,overhead"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    fig = json.loads(res.stdout.strip().splitlines()[-1])
    assert fig["warm_2_s"] > 0 and fig["warm_8_s"] > 0
    for kind in ("linear", "mlp"):  # the capture, PyTorch's own Python hook, and no hook
        for variant in ("captured", "python_hook", "plain"):
            assert fig[f"{kind}_{variant}_step_ms"] > 0
    assert set(fig["targets_met"]) == {"warm_2_s", "warm_8_s", "overhead_ratio"}
    assert "warm Run" in res.stderr  # the human-readable table


def test_the_bench_floor_loop_has_the_hooks_it_claims() -> None:
    """The pipeline bench's bare loop uses DDP's built-in all-reduce; its floor arm has
    PyTorch's Python allreduce_hook and a ready hook on every parameter, as a capture must.
    Both arms in one process: each process pays for a pool of its own."""
    code = (
        "import json, sys\n"
        "from ddp_viz.bench import scenario_for\n"
        "from ddp_viz.bench.pipeline import bare_report\n"
        "if __name__ == '__main__':\n"
        "    for hooks in (False, True):\n"
        "        got = bare_report(scenario_for(2, steps=14), timeout=120, hooks=hooks)\n"
        "        print(json.dumps(got))\n"
    )
    # in a process of its own: the pool's forkserver lives as long as the process that made it
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    bare, floor = (json.loads(x) for x in res.stdout.strip().splitlines()[-2:])
    assert bare["per_step_s"] > 0 and floor["per_step_s"] > 0
    assert (bare["comm_hook"], floor["comm_hook"]) == ("", "allreduce_hook")
    assert (bare["ready_hooks"], floor["ready_hooks"]) == (0, 2)  # Linear(1, 1): weight, bias
