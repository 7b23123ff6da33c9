"""The headless command line, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ddp_viz import protocol


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ddp_viz", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.gloo
def test_run_prints_the_lesson_table() -> None:
    res = cli("run")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    for needle in ("-10.5", "-6.5", "-44.5", "-12.5", "-27.5", "-9.5", "0.775", "0.095"):
        assert needle in out
    assert "✓ ranks agree" in out and "✓ average = full batch" in out


@pytest.mark.gloo
def test_run_json_is_the_event_stream() -> None:
    res = cli("run", "--json", "--world-size", "4", "--steps", "2")
    assert res.returncode == 0, res.stderr
    events = [protocol.decode(line) for line in res.stdout.splitlines()]
    assert isinstance(events[-1], protocol.RunFinished)
    assert sum(isinstance(e, protocol.AveragedGrad) for e in events) == 8
    assert json.loads(res.stdout.splitlines()[0])["event"] == "engine_ready"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("--world-size", "0"), "world_size"),
        (("--world-size", "two"), "world_size"),
        (("--steps", "100001"), "steps"),
        (("--lr", "-1"), "lr"),
        (("--lr", "nan"), "lr"),
        (("--scenario", "/nonexistent/s.toml"), "scenario"),
    ],
)
def test_invalid_input_exits_2_with_one_line_naming_the_field(args, field) -> None:
    res = cli("run", *args, timeout=30)
    assert res.returncode == 2
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{field}:" in lines[0]


def test_bad_scenario_file(tmp_path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('x = [1, 2]\ny = [1, 2]\nspeed = "fast"\n')
    res = cli("run", "--scenario", str(path), timeout=30)
    assert res.returncode == 2 and "speed: unknown key" in res.stderr


@pytest.mark.gloo
def test_a_diverging_run_exits_1() -> None:
    res = cli("run", "--lr", "100", "--steps", "200")
    assert res.returncode == 1
    assert "diverged at step" in res.stderr
