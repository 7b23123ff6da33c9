"""The event format's JSON Schema (``ddp-viz schema``): every recording is valid against it, a
renamed field is not, and the format cannot change without its version going up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import ValidationError

from ddp_viz.model import registry
from ddp_viz.model.protocol import encode
from ddp_viz.model.recording_format import SCHEMA_VERSION, header, strict
from ddp_viz.model.recordings import upgrade
from ddp_viz.model.schema import CORE, schema
from tests.conftest import DATA
from tests.schema_lines import ByEvent

SNAPSHOTS = DATA / "schema"
TESTS = DATA.parent
RECORDINGS = sorted(DATA.glob("*.jsonl"))


@pytest.fixture(scope="module")
def validator() -> ByEvent:
    return ByEvent(schema())


def as_written_today(path: Path) -> list[dict[str, Any]]:
    """A recording's lines as this version writes them: a header-less (schema 0) file is
    upgraded by its steps, and its bare NaN tokens become the words the format uses."""
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    version = lines[0]["schema"] if lines and lines[0].get("event") == "recording" else 0
    if version == 0:
        lines = [json.loads(encode(header("ddp-pattern")))] + [upgrade(x, 0) for x in lines]
    return [strict(x) for x in lines]


def test_the_recordings_are_there() -> None:
    assert len(RECORDINGS) >= 20 and (DATA / "watched-2-ranks.jsonl") in RECORDINGS


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_every_recording_is_valid_against_the_schema(validator, path) -> None:
    for n, line in enumerate(as_written_today(path), start=1):
        errors = sorted(validator.iter_errors(line), key=str)
        assert not errors, f"{path.name} line {n}: {errors[0].message}"


def test_a_watched_recording_as_watch_writes_it_is_valid_as_written(validator, tmp_path) -> None:
    from ddp_viz.kinds.watched.watch.command import Recorder
    from tests.conftest import load_recording

    path = tmp_path / "watched.jsonl"
    recorder = Recorder(str(path))
    for event in load_recording("watched-2-ranks.jsonl"):  # its loss is NaN
        recorder(event)
    recorder.file.close()
    lines = [json.loads(x, parse_constant=_reject) for x in path.read_text().splitlines()]
    assert lines[0]["lesson"] == "watched"
    for n, line in enumerate(lines, start=1):
        errors = sorted(validator.iter_errors(line), key=str)
        assert not errors, f"line {n}: {errors[0].message}"


@pytest.mark.parametrize(
    ("kind", "old", "new"),
    [("run_started", "world_size", "worldsize"), ("local_grad", "loss", "losses")],
)
def test_a_recording_with_a_field_renamed_is_not(validator, kind, old, new) -> None:
    lines = as_written_today(DATA / "default-run.jsonl")
    line = next(x for x in lines if x["event"] == kind)
    line[new] = line.pop(old)
    with pytest.raises(ValidationError):
        validator.validate(line)


def _shape(s: Any) -> Any:
    """The schema without its prose: a docstring edited is not a new format."""
    if isinstance(s, dict):
        return {k: _shape(v) for k, v in s.items() if k != "description"}
    if isinstance(s, list):
        return [_shape(v) for v in s]
    return s


def test_the_format_does_not_change_without_a_schema_version_bump() -> None:
    """The core's part: the header and the core's events (each kind's part is its own, below)."""
    snapshot = SNAPSHOTS / f"v{SCHEMA_VERSION}.json"
    # the file to write is the next version's: this one's snapshot is the format as it was
    following = SNAPSHOTS / f"v{SCHEMA_VERSION + 1}.json"
    how = (
        f"the core's events or the header changed: bump SCHEMA_VERSION to {SCHEMA_VERSION + 1} "
        "(ddp_viz/model/recording_format.py), add the step from "
        f"{SCHEMA_VERSION} to UPGRADES (ddp_viz/model/recordings.py), save "
        f"`ddp-viz schema --kind '' > {following.relative_to(DATA.parent.parent)}` "
        "and `ddp-viz schema --markdown > docs/events.md`"
    )
    assert snapshot.is_file(), how
    assert _shape(schema(CORE)) == _shape(json.loads(snapshot.read_text())), how
    # every version keeps its snapshot: the history of the format
    assert sorted(p.name for p in SNAPSHOTS.glob("v*.json")) == sorted(
        f"v{n}.json" for n in range(1, SCHEMA_VERSION + 1)
    )


@pytest.mark.parametrize("kind", list(registry.event_versions()))
def test_a_kinds_events_do_not_change_without_its_own_version_going_up(kind: str) -> None:
    """A kind's events are its own: their snapshots live in its tests folder, one a version,
    and a change to them raises the kind's version, never the core's."""
    version = registry.events_version(kind)
    folder = TESTS / "kinds" / kind
    snapshot = folder / f"events-v{version}.json"
    following = folder / f"events-v{version + 1}.json"
    how = (
        f"the events of kind {kind!r} changed: raise its events_version to {version + 1} "
        f"(its RunKind, src/ddp_viz/kinds/{kind}/), add its upgrade step from {version}, "
        f"and save `ddp-viz schema --kind {kind} > {following.relative_to(TESTS.parent)}`"
    )
    if not snapshot.is_file():
        how = (
            f"no snapshot of kind {kind!r}'s events, version {version}: save "
            f"`ddp-viz schema --kind {kind} > {snapshot.relative_to(TESTS.parent)}`"
        )
    assert snapshot.is_file(), how
    assert _shape(schema(kind)) == _shape(json.loads(snapshot.read_text())), how
    assert sorted(p.name for p in folder.glob("events-v*.json")) == sorted(
        f"events-v{n}.json" for n in range(1, version + 1)
    )
    # a step from every older version of its events to the next
    steps = registry.get(kind).upgrades
    assert sorted(steps) == list(range(1, version)), f"{kind}: upgrades for 1 … {version - 1}"


def _reject(token: str) -> None:
    raise ValueError(f"not strict JSON: a bare {token} token")
