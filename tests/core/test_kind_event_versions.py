"""Each kind versions its own events (pure): the header says which version of each kind's
events a file holds, an older kind's events are upgraded by the kind's own steps, a newer
kind's events show what this ddp-viz knows of them and the status line says so, and the core's
schema version does not move for any of it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ddp_viz.model import protocol, registry
from ddp_viz.model.recording_format import FORMAT, SCHEMA_VERSION, header
from ddp_viz.model.recordings import read_lines
from tests.conftest import DATA

RUN = DATA / "resuming-2-ranks.jsonl"  # the kind at version 2: it added zero_consolidated


def lines_of(kinds: dict[str, int] | None, schema: int = SCHEMA_VERSION) -> list[str]:
    head = {"event": "recording", "format": FORMAT, "schema": schema, "app": "0.1.0"}
    head |= {"lesson": "when-a-rank-dies"} | ({} if kinds is None else {"kinds": kinds})
    return [json.dumps(head), *RUN.read_text().splitlines()[1:]]


def test_the_header_names_each_kind_that_has_events_with_its_version() -> None:
    said = json.loads(protocol.encode(header("ddp-pattern")))["kinds"]
    assert said["resuming"] == 2 and said["watched"] == 4 and said["collective"] == 1
    assert said == {k: registry.get(k).events_version for k in said}
    # every kind folder that defines an event class is named, and nothing else
    folders = {
        c.__module__.split(".")[2]
        for c in protocol.EVENT_TYPES.values()
        if c.__module__.startswith("ddp_viz.kinds.")
    }
    assert set(said) == folders


def test_an_event_belongs_to_the_kind_whose_folder_defines_it() -> None:
    from ddp_viz.kinds.resuming.events import ZeroConsolidated

    assert registry.events_kind(ZeroConsolidated) == "resuming"
    assert registry.events_kind(protocol.RunStarted) is None


def test_a_kinds_older_events_are_upgraded_by_its_own_steps(monkeypatch) -> None:
    seen: list[str] = []

    def step(obj):  # what the kind's own step from 1 to 2 would do
        seen.append(obj["event"])
        return obj

    kind = registry.get("resuming")
    monkeypatch.setitem(registry._KINDS, "resuming", dataclasses.replace(kind, upgrades={1: step}))
    rec = read_lines(lines_of({"resuming": 1, "watched": 1}))
    assert rec.bad == 0 and rec.version_line() == ""
    ours = {json.loads(x)["event"] for x in RUN.read_text().splitlines()[1:]}
    ours = {w for w in ours if registry.events_kind(protocol.EVENT_TYPES[w]) == "resuming"}
    assert set(seen) == ours and "run_started" not in seen  # the core's are not the kind's
    # a header without kinds (schema 5): every kind at 1, so the step runs for it too
    seen.clear()
    read_lines(lines_of(None, schema=5))
    assert set(seen) == ours
    # at the kind's own version: no step
    seen.clear()
    read_lines(lines_of({"resuming": 2}))
    assert seen == []


def test_a_kinds_newer_events_show_what_they_can_and_say_so() -> None:
    lines = lines_of({"resuming": 3})
    i = next(n for n, x in enumerate(lines) if '"zero_consolidated"' in x)
    lines[i] = lines[i][:-1] + ', "shards_seen": 4}'  # a field of the kind's version 3
    lines.insert(i, json.dumps({"event": "zero_reloaded", "run": 1, "rank": 0}))
    rec = read_lines(lines)
    assert rec.schema == SCHEMA_VERSION and not rec.newer and rec.bad == 0
    assert rec.left_out == 2
    assert [e.kind for e in rec.events] == [
        json.loads(x)["event"] for x in lines[1:] if '"zero_reloaded"' not in x
    ]
    line = rec.version_line()
    assert "resuming 3 (here 2)" in line and "2 unknown event(s)/field(s) left out" in line
    # the same lines under a header of this version: the unknown word is an error, not news
    same = read_lines(lines_of({"resuming": 2})[:1] + lines[1:])
    assert same.bad == 1 and same.left_out == 0 and same.version_line() == ""


def test_a_kind_this_ddp_viz_does_not_have_is_left_out_and_named() -> None:
    lines = lines_of({"resuming": 2, "telepathy": 1})
    lines.insert(2, json.dumps({"event": "thought_sent", "run": 1, "rank": 0}))
    rec = read_lines(lines)
    assert rec.bad == 0 and rec.left_out == 1
    assert "telepathy 1 (not a kind this ddp-viz has)" in rec.version_line()


@pytest.mark.parametrize("kinds", [[1, 2], {"resuming": "2"}, {"resuming": 0}, {"": True}])
def test_a_header_whose_kinds_are_not_versions_is_not_a_header(kinds) -> None:
    head = {"event": "recording", "format": FORMAT, "schema": SCHEMA_VERSION, "app": "0.1.0"}
    rec = read_lines([json.dumps(head | {"lesson": "x", "kinds": kinds})])
    assert rec.bad == 1 and rec.schema == 0
