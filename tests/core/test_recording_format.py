"""Recordings anyone can read (issue 28): a header with a schema version, explicit upgrades from
older versions, what a newer version holds shown as far as this one knows it, strict JSON."""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest

from ddp_viz.kinds.watched.events import KIND as WATCHED
from ddp_viz.kinds.watched.watch.command import Recorder
from ddp_viz.model import protocol
from ddp_viz.model.exports import chrome_trace_json, events_jsonl
from ddp_viz.model.recording_format import FORMAT, SCHEMA_VERSION, header
from ddp_viz.model.recordings import UPGRADES, read_lines
from ddp_viz.model.schema import schema_json
from ddp_viz.model.timeline import RunStatus, record
from tests.conftest import DATA, load_recording


def reject(token: str) -> None:
    raise ValueError(f"not strict JSON: a bare {token} token")


def strict_lines(text: str) -> list:
    """Every line parsed as strict JSON: a NaN, Infinity or -Infinity token fails."""
    return [json.loads(line, parse_constant=reject) for line in text.splitlines() if line.strip()]


def test_each_older_schema_version_has_exactly_one_upgrade_step() -> None:
    assert sorted(UPGRADES) == list(range(SCHEMA_VERSION))


def test_a_recording_without_a_header_reads_as_schema_0() -> None:
    rec = read_lines((DATA / "default-run.jsonl").open("rb"))
    assert rec.schema == 0 and rec.lesson is None and rec.bad == 0 and not rec.newer
    assert "schema 0" in rec.version_line()
    assert rec.events == load_recording("default-run.jsonl")


def test_the_step_from_schema_0_fills_in_what_old_engines_did_not_write() -> None:
    line = json.dumps(
        {
            "event": "run_started",
            "run": 1,
            "world_size": 2,
            "steps": 1,
            "scenario": {"model": {"kind": "linear"}},
        }
    )
    (start,) = read_lines([line]).events
    assert start.params == [{"name": "weight", "shape": [1, 1]}, {"name": "bias", "shape": [1]}]
    assert start.cores == 0
    # in this schema a run_started without parameters has none: no guessing
    this = read_lines([protocol.encode(header("ddp-pattern")), line])
    assert this.schema == SCHEMA_VERSION and this.version_line() == ""
    assert this.events[0].params == [] and this.lesson == "ddp-pattern"


def test_a_newer_schema_shows_what_it_knows_and_says_what_it_left_out() -> None:
    future = {
        "event": "recording",
        "format": FORMAT,
        "schema": SCHEMA_VERSION + 1,
        "app": "9.0",
        "lesson": "ddp-pattern",
        "colour": "red",
    }
    lines = [json.dumps(future), *(DATA / "default-run.jsonl").read_text().splitlines()]
    lines.insert(3, json.dumps({"event": "hologram", "run": 1}))  # a kind from the future
    lines[-1] = lines[-1][:-1] + ', "energy_j": 3.5}'  # a field from the future
    rec = read_lines(lines)
    assert rec.newer and rec.schema == SCHEMA_VERSION + 1 and rec.app == "9.0"
    assert rec.left_out == 2 and rec.bad == 0
    assert rec.events == load_recording("default-run.jsonl")
    assert f"newer than this ddp-viz's ({SCHEMA_VERSION})" in rec.version_line()
    assert "2 unknown event(s)/field(s) left out" in rec.version_line()


def test_a_file_of_another_format_is_not_read_as_ours() -> None:
    other = json.dumps({"event": "recording", "format": "someone-else", "schema": 1})
    rec = read_lines([other, *(DATA / "default-run.jsonl").read_text().splitlines()])
    assert rec.bad == 1 and rec.schema == 0


def test_non_finite_numbers_are_words_and_read_back_as_numbers() -> None:
    grads = {"w": [1.0, math.inf, -math.inf], "big": {"shape": [100], "norm": math.nan}}
    line = protocol.encode(protocol.LocalGrad(1, 0, 0, math.nan, grads))
    (data,) = strict_lines(line)
    assert data["loss"] == "NaN" and data["grads"]["w"] == [1.0, "Infinity", "-Infinity"]
    back = protocol.decode(line)
    assert math.isnan(back.loss) and back.grads["w"][1:] == [math.inf, -math.inf]
    assert math.isnan(back.grads["big"]["norm"])
    # a recording made before this change, with bare tokens, still decodes
    old = line.replace('"NaN"', "NaN").replace('"Infinity"', "Infinity")
    assert math.isnan(protocol.decode(old).loss)


@pytest.mark.parametrize("name", ["diverging-lr10.jsonl", "watched-2-ranks.jsonl"])
def test_an_export_of_a_run_that_went_non_finite_is_strict_json(name) -> None:
    rec = record(load_recording(name))
    parsed = strict_lines(events_jsonl(rec, "ddp-pattern"))
    assert parsed[0]["event"] == "recording" and len(parsed) == len(rec.events) + 1
    json.loads(chrome_trace_json(rec), parse_constant=reject)


def test_a_watched_recording_whose_loss_went_nan_is_strict_json(tmp_path) -> None:
    path = tmp_path / "watched.jsonl"
    recorder = Recorder(str(path))  # what `ddp-viz watch --record` writes
    for event in load_recording("watched-2-ranks.jsonl"):
        recorder(event)
    recorder.file.close()
    parsed = strict_lines(path.read_text())
    assert parsed[0] == json.loads(protocol.encode(header(WATCHED)))
    assert "NaN" in {p.get("loss") for p in parsed}
    again = read_lines(path.read_text().splitlines())
    assert again.lesson == WATCHED and again.schema == SCHEMA_VERSION and again.bad == 0
    if shutil.which("jq"):  # what the issue asks of every file: `jq -c . FILE` reads it
        res = subprocess.run(["jq", "-c", ".", str(path)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr


def test_the_schema_and_commands_are_strict_json() -> None:
    json.loads(schema_json(), parse_constant=reject)
    cmd = protocol.RunCommand(1, {"lr": math.inf})
    assert json.loads(protocol.encode_command(cmd), parse_constant=reject)["scenario"] == {
        "lr": "Infinity"
    }


def _with_header(tmp_path, name: str, head: dict, extra: list[str] = ()) -> object:
    path = tmp_path / name
    lines = [json.dumps(head), *(DATA / name).read_text().splitlines(), *extra]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_window_opens_the_lesson_the_header_names(make_window, tmp_path) -> None:
    window = make_window()
    # the scenario alone (schema 0) would say every-parameter
    path = _with_header(tmp_path, "mlp-2-ranks-3-steps.jsonl", json.loads(encode_header("buckets")))
    window.file_actions.open_run(path)
    assert window.lesson.id == "buckets"
    window.file_actions.open_run(DATA / "mlp-2-ranks-3-steps.jsonl")
    assert window.lesson.id == "every-parameter"
    assert window.status.text().endswith(
        f"Recorded before versioned recordings (schema 0): upgraded to schema {SCHEMA_VERSION}."
    )


def test_a_newer_recording_opens_saying_so_first(make_window, tmp_path) -> None:
    window = make_window()
    head = {**json.loads(encode_header("ddp-pattern")), "schema": SCHEMA_VERSION + 1}
    path = _with_header(tmp_path, "default-run.jsonl", head, [json.dumps({"event": "x", "run": 1})])
    window.file_actions.open_run(path)
    assert window.status.text().startswith(f"Event schema {SCHEMA_VERSION + 1} (ddp-viz 0.1.0)")
    assert "1 unknown event(s)/field(s) left out" in window.status.text()
    assert window.session.record.status is RunStatus.FINISHED


def encode_header(lesson: str) -> str:
    return protocol.encode(header(lesson))
