"""The client gives a run up only when the engine goes silent, never for taking long.

`ddp-viz run` once gave every run 120 s in all: a lesson of many steps, or eight ranks spawned
one by one on a laptop without forkserver, failed "did not end" while its events still came.
A stand-in engine (plain Python, no torch) paces its events to show both sides.
"""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import pytest

from ddp_viz import client as client_module
from ddp_viz.client import EngineClient
from ddp_viz.model import protocol
from ddp_viz.model.scenario import Scenario

_ENGINE = textwrap.dedent(
    """
    import sys, time
    from ddp_viz.model import protocol

    gaps = [float(g) for g in sys.argv[1].split(",")]
    sys.stdin.readline()  # the run command
    for i, gap in enumerate(gaps):
        time.sleep(gap)
        event = protocol.WorkerState(slot=i, pid=None, state="ready")
        sys.stdout.write(protocol.encode(event) + "\\n")
        sys.stdout.flush()
    if sys.argv[2] == "finish":
        sys.stdout.write(protocol.encode(protocol.RunFinished(1, 3, 1.0)) + "\\n")
        sys.stdout.flush()
    else:
        time.sleep(60)  # silent, still running: the client must give up
    """
)


def _client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gaps: str, end: str) -> EngineClient:
    script = tmp_path / "engine.py"
    script.write_text(_ENGINE, encoding="utf-8")
    monkeypatch.setattr(
        client_module, "engine_command", lambda: [sys.executable, str(script), gaps, end]
    )
    return EngineClient()


def test_a_run_longer_than_the_timeout_that_keeps_talking_ends_normally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _client(tmp_path, monkeypatch, "0.3,0.3,0.3,0.3,0.3,0.3", "finish")
    try:
        t0 = time.monotonic()
        events = list(engine.run(Scenario(), timeout=1.0))
        took = time.monotonic() - t0
    finally:
        engine.close(timeout=0.5)
    assert took > 1.0  # longer than the timeout in all: only the silences count
    assert [type(e) for e in events] == [protocol.WorkerState] * 6 + [protocol.RunFinished]


def test_an_engine_that_goes_silent_is_given_up_with_the_silence_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _client(tmp_path, monkeypatch, "0.1,0.1", "hang")
    seen: list[protocol.Event] = []
    try:
        with pytest.raises(TimeoutError, match=r"run 1: the engine sent nothing for 0\.8 s"):
            for event in engine.run(Scenario(), timeout=0.8):
                seen.append(event)
    finally:
        engine.close(timeout=0.5)
    assert len(seen) == 2  # what came before the silence was handed over
    assert engine.proc.poll() is not None  # and nothing is left running
