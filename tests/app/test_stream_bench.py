"""``ddp-viz bench --only stream --smoke``: a short fast run in the window (offscreen), whose
figure counts the events the engine says it sent for the run against those the window
received. A run streamed whole reports 0 dropped; one that loses an event on its way to the
window (the probe's ``--drop``) reports exactly that one. The frame figures are not judged:
a smoke run on a shared machine measures nothing worth a limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ddp_viz.bench import stream
from ddp_viz.model.scenario import default_scenario

pytestmark = [pytest.mark.gloo, pytest.mark.slow]


def _engine_count(fig: dict) -> int:
    """What the engine must have sent, worked out from the run, not from the engine: its
    start; per rank rank_started, initial_params and, started as torchrun starts a script
    (the default scenario), launch_env; per rank and step a local_grad and a timing plus an
    averaged_grad and params at the steps with values; the reference at its steps; the end.
    (20 steps: every step has values and a reference.)"""
    steps, ranks = fig["stream_steps"], fig["stream_ranks"]
    assert default_scenario().launch.init_method == "env"
    return 1 + 3 * ranks + steps * (4 * ranks + 1) + 1


def test_the_smoke_run_reports_every_event_the_engine_sent_and_none_dropped() -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    cmd = [sys.executable, "-m", "ddp_viz", "bench", "--only", "stream", "--smoke"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    fig = json.loads(res.stdout.strip().splitlines()[-1])
    assert (fig["stream_steps"], fig["stream_ranks"]) == (20, 3)
    assert fig["stream_sent"] == _engine_count(fig) == fig["stream_received"]
    assert fig["stream_dropped"] == 0 and fig["stream_bad_lines"] == 0
    assert fig["targets_met"]["stream_dropped"] is True
    row = next(ln for ln in res.stderr.splitlines() if "streaming 20 steps × 3 ranks" in ln)
    assert f"the engine sent {fig['stream_sent']:,} events" in row and "dropped 0" in row
    assert "streaming: events sent but not received: 0.00 (want ≤ 0) ✓" in res.stderr


def test_an_event_lost_on_the_way_to_the_window_is_reported_dropped() -> None:
    fig = stream(smoke=True, drop=7)
    assert fig["stream_sent"] == _engine_count(fig)  # the engine sent them all …
    assert fig["stream_received"] == fig["stream_sent"] - 1  # … the window got one fewer
    assert fig["stream_dropped"] == 1
