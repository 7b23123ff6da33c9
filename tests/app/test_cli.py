"""The headless command line, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ddp_viz import __version__
from ddp_viz.model import protocol
from ddp_viz.model.recording_format import SCHEMA_VERSION
from ddp_viz.model.timeline import RunStatus
from tests.conftest import still_running


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
    first, second = (json.loads(line) for line in res.stdout.splitlines()[:2])
    kinds = first.pop("kinds")
    assert first == {
        "event": "recording",
        "format": "ddp-viz-events",
        "schema": SCHEMA_VERSION,
        "app": __version__,
        "lesson": "ddp-pattern",
    }
    # each kind folder's events with their version (the restart lesson's are at 2)
    assert kinds["resuming"] == 2 and kinds["collective"] == 1 and "ddp_step" not in kinds
    assert second["event"] == "engine_ready"


@pytest.mark.gloo
def test_run_json_passes_every_line_of_a_long_run_whole_and_in_order() -> None:
    """The steps' lines go through in bursts (a run of them as one write): none lost, none
    cut or joined, each rank's steps in order, the run's own events decoded in their place."""
    res = cli("run", "--json", "--world-size", "3", "--steps", "150")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    events = [protocol.decode(line) for line in lines[1:]]  # after the header
    steps: dict[int, list[int]] = {}
    for e in events:
        if isinstance(e, protocol.Timing):
            steps.setdefault(e.rank, []).append(e.step)
    assert steps == {rank: list(range(150)) for rank in range(3)}
    assert isinstance(events[-1], protocol.RunFinished) and events[-1].steps_completed == 150
    started = [i for i, e in enumerate(events) if isinstance(e, protocol.RunStarted)]
    first_step = min(i for i, e in enumerate(events) if isinstance(e, protocol.Timing))
    assert len(started) == 1 and started[0] < first_step


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
@pytest.mark.parametrize("json_out", [False, True])
def test_a_diverging_run_exits_1(json_out: bool) -> None:
    # with --json the steps' lines pass through undecoded; the outcome must still be read
    res = cli("run", *(["--json"] if json_out else []), "--lr", "100", "--steps", "200")
    assert res.returncode == 1
    assert "diverged at step" in res.stderr
    if json_out:
        events = [protocol.decode(line) for line in res.stdout.splitlines()]
        assert isinstance(events[-1], protocol.RunFailed)


def _as_at_a_terminal() -> None:
    """In the child, before it starts: SIGINT at its default, as for a command typed at a
    terminal. A test run started in the background (``make test &``, some CI scripts) hands
    its children SIGINT ignored, and Python keeps an ignored SIGINT ignored, as it should."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_long_run() -> tuple[subprocess.Popen, dict[int, int]]:
    """A 100,000-step run with --json; returns once both ranks have reported their pids."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ddp_viz", "run", "--json", "--steps", "100000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_at_a_terminal,
    )
    pids: dict[int, int] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        event = protocol.decode(line)
        if isinstance(event, protocol.RankStarted):
            pids[event.rank] = event.pid
        if isinstance(event, protocol.LocalGrad) and event.step >= 3:
            return proc, pids
    raise AssertionError("the run ended before it streamed")


def _family(pid: int) -> list:
    import psutil

    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


@pytest.mark.gloo
@pytest.mark.posix_signals  # SIGKILL, and _start_long_run's preexec_fn
def test_a_killed_rank_makes_the_cli_exit_1_naming_rank_and_signal() -> None:
    import os
    import signal

    proc, pids = _start_long_run()
    os.kill(pids[1], signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "rank 1" in err and "SIGKILL" in err


@pytest.mark.gloo
@pytest.mark.posix_signals  # Windows can send neither to a process (nor has preexec_fn)
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupting_the_cli_leaves_no_process(sig: str) -> None:
    import signal

    proc, _ = _start_long_run()
    family = _family(proc.pid)
    assert len(family) >= 4  # cli, engine, ranks, and the forkserver or resource tracker
    proc.send_signal(getattr(signal, sig))
    proc.communicate(timeout=30)
    assert proc.returncode in (130, 143)
    alive = still_running(family, timeout=3)
    assert not alive, [p.pid for p in alive]


@pytest.mark.gloo
def test_run_exports_a_gif_a_trace_and_events(tmp_path) -> None:
    from PIL import Image

    from ddp_viz.model.timeline import record
    from tests.core.test_exports import check_trace

    gif, trace, events = tmp_path / "run.gif", tmp_path / "trace.json", tmp_path / "run.jsonl"
    res = cli(
        "run", "--steps", "2", "--gif", str(gif), "--trace", str(trace), "--events", str(events)
    )
    assert res.returncode == 0, res.stderr
    with Image.open(gif) as img:
        assert img.n_frames == 2 * 4
    rec = record([protocol.decode(x) for x in events.read_text().splitlines()])
    assert rec.status is RunStatus.FINISHED and len(rec.complete_steps()) == 2
    check_trace(json.loads(trace.read_text()), rec)


@pytest.mark.parametrize(
    ("args", "flag"),
    [(("--gif", "/nonexistent/dir/x.gif"), "--gif"), (("--gif", "x.gif", "--fps", "0"), "--fps")],
)
def test_bad_export_flags_exit_2_before_running(args, flag) -> None:
    res = cli("run", *args, timeout=30)
    assert res.returncode == 2 and res.stderr.startswith(f"ddp-viz: {flag}:")


def test_schema_prints_a_json_schema_of_every_event_kind() -> None:
    from ddp_viz.model.event_base import EVENT_TYPES
    from ddp_viz.model.registry import load

    res = cli("schema")
    assert res.returncode == 0, res.stderr
    printed = json.loads(res.stdout)
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    load()
    assert {d.removeprefix("event.") for d in printed["$defs"] if d.startswith("event.")} == set(
        EVENT_TYPES
    )


def test_lessons_lists_the_course() -> None:
    res = cli("lessons", timeout=30)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    # launching first, the all-reduce and buckets last (correctness before speed)
    assert lines[0].split()[:2] == ["1.", "ddp-pattern"] and "Launching" in lines[0]
    assert any(line.split()[:2] == ["2.", "every-parameter"] for line in lines)
    assert any(line.split()[:2] == ["9.", "buckets"] for line in lines)


def test_check_prints_the_rules_and_the_kinds_as_markdown() -> None:
    from ddp_viz.model.kinds_doc import kinds_markdown
    from ddp_viz.model.rules import rules_markdown

    kinds = cli("check", "--kinds", timeout=30)
    assert kinds.returncode == 0 and kinds.stdout == kinds_markdown(), kinds.stderr
    assert "  - scene `precision`: The dtypes each arm saw" in kinds.stdout
    rules = cli("check", "--rules", timeout=30)
    assert rules.returncode == 0 and rules.stdout == rules_markdown(), rules.stderr


def test_an_unknown_lesson_is_refused_before_anything_starts() -> None:
    res = cli("run", "--lesson", "nope", timeout=30)
    assert res.returncode == 2 and res.stdout == ""
    assert "--lesson: no lesson 'nope'" in res.stderr and "ddp-pattern" in res.stderr


def test_a_reader_that_stops_early_is_not_an_error(monkeypatch) -> None:
    """`ddp-viz lessons | head -1`: the pipe closes while the CLI still writes."""
    import sys

    from ddp_viz.cli import main

    class ClosedPipe:
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["lessons"]) == 0


@pytest.mark.parametrize(
    ("argv", "opened"),
    [
        (["run.jsonl"], ["--open", "run.jsonl"]),
        (["--size", "1280x800", "run.jsonl"], ["--size", "1280x800", "--open", "run.jsonl"]),
        (["--projector", "run.jsonl", "--quit"], ["--projector", "--open", "run.jsonl", "--quit"]),
        (["--size=1280x800", "run.jsonl"], ["--size=1280x800", "--open", "run.jsonl"]),
        # a value that looks like a recording is the option's, and a command stays a command
        (["--screenshot", "a.jsonl", "--quit"], ["--screenshot", "a.jsonl", "--quit"]),
        (["--open", "a.jsonl"], ["--open", "a.jsonl"]),
        (["run", "--events", "a.jsonl"], ["run", "--events", "a.jsonl"]),
        (["--size", "800x600", "run", "--json"], ["--size", "800x600", "run", "--json"]),
    ],
)
def test_a_recording_is_opened_wherever_the_window_s_options_put_it(argv, opened) -> None:
    from ddp_viz.cli import build_parser, opening

    assert opening(argv, build_parser()) == opened
    args = build_parser().parse_args(opened)
    if "run.jsonl" in argv:
        assert args.open == "run.jsonl" and args.command is None
