"""Reading a recording line by line (model/recordings.py, pure): the sentence the status line
says about its version, word for word for each case; which lines count as bad and why; what an
old engine's run_started gets filled in with, and what it does not."""

from __future__ import annotations

import json

import pytest

from ddp_viz.model import protocol, registry
from ddp_viz.model.recording_format import FORMAT, SCHEMA_VERSION
from ddp_viz.model.recordings import Recording, kind_of_word, read_lines, upgrade
from tests.conftest import DATA, load_recording

LINES = (DATA / "default-run.jsonl").read_text().splitlines()


def head(schema: int = SCHEMA_VERSION, **more) -> str:
    return json.dumps(
        {"event": "recording", "format": FORMAT, "schema": schema, "app": "0.3", "lesson": "x"}
        | more
    )


def test_each_version_line_word_for_word() -> None:
    assert Recording([], schema=SCHEMA_VERSION).version_line() == ""
    assert Recording([], schema=0).version_line() == (
        f"Recorded before versioned recordings (schema 0): upgraded to schema {SCHEMA_VERSION}."
    )
    assert Recording([], schema=SCHEMA_VERSION - 1).version_line() == (
        f"Event schema {SCHEMA_VERSION - 1}: upgraded to schema {SCHEMA_VERSION}."
    )
    assert Recording([], schema=1).version_line() == (
        f"Event schema 1: upgraded to schema {SCHEMA_VERSION}."
    )
    newer = SCHEMA_VERSION + 1
    assert Recording([], schema=newer, app="9.1").version_line() == (
        f"Event schema {newer} (ddp-viz 9.1) is newer than this ddp-viz's ({SCHEMA_VERSION}): "
        "showing what it can."
    )
    assert Recording([], schema=newer, left_out=3).version_line() == (
        f"Event schema {newer} (ddp-viz ?) is newer than this ddp-viz's ({SCHEMA_VERSION}): "
        "showing what it can, 3 unknown event(s)/field(s) left out."
    )


def test_a_kind_newer_than_this_ones_is_named_with_both_versions() -> None:
    here = registry.events_version("resuming")
    kinds = {"resuming": here + 1, "watched": 1, "zeta": 2, "alpha": 4}
    rec = Recording([], schema=SCHEMA_VERSION, kinds=kinds)
    assert rec.newer_kinds() == {"resuming": here + 1, "zeta": 2, "alpha": 4}
    assert rec.version_line() == (
        "Events of a newer version than this ddp-viz reads: alpha 4 (not a kind this ddp-viz "
        f"has), resuming {here + 1} (here {here}), zeta 2 (not a kind this ddp-viz has); "
        "showing what it can."
    )
    rec.left_out = 1
    assert rec.version_line().endswith(
        "; showing what it can, 1 unknown event(s)/field(s) left out."
    )
    # a kind at this version, or older, is not newer
    same = Recording([], schema=SCHEMA_VERSION, kinds={"resuming": here, "watched": 1})
    assert same.newer_kinds() == {} and same.version_line() == ""


def test_the_newer_schema_is_said_before_a_newer_kind() -> None:
    rec = Recording([], schema=SCHEMA_VERSION + 1, app="9", kinds={"zeta": 1})
    assert rec.newer and rec.version_line().startswith(f"Event schema {SCHEMA_VERSION + 1} ")


def test_the_header_is_read_once_and_a_second_is_ignored() -> None:
    rec = read_lines([head(), "", "  ", head(schema=0, lesson="y"), *LINES])
    assert (rec.schema, rec.lesson, rec.app, rec.bad) == (SCHEMA_VERSION, "x", "0.3", 0)
    assert rec.events == load_recording("default-run.jsonl")


@pytest.mark.parametrize(
    "bad",
    [
        head(schema=-1),
        head(schema="5"),
        head(schema=True),
        head(schema=2.0),
        json.dumps({"event": "recording", "schema": 1}),  # no format
        "[1, 2]",  # not an object
        "42",
        "{not json",
        '{"event": "params", "run": 1}',  # fields missing
    ],
)
def test_a_line_that_is_not_an_event_is_counted_bad_and_skipped(bad) -> None:
    rec = read_lines([bad, *LINES])
    assert rec.bad == 1 and rec.schema == 0
    assert rec.events == load_recording("default-run.jsonl")


def test_a_header_at_schema_0_is_a_version_number() -> None:
    rec = read_lines([head(schema=0), *LINES])
    assert rec.bad == 0 and rec.lesson == "x" and rec.schema == 0


def test_a_line_past_the_limit_is_bad_and_one_at_it_is_read() -> None:
    start = json.loads(next(x for x in LINES if "run_started" in x))
    base = json.dumps({**start, "scenario": {**start["scenario"], "pad": ""}})
    room = protocol.MAX_LINE_BYTES - len(base.encode())
    at = json.dumps({**start, "scenario": {**start["scenario"], "pad": "a" * room}})
    assert len(at.encode()) == protocol.MAX_LINE_BYTES
    past = at.replace('"pad": "a', '"pad": "aa')
    assert read_lines([at]).bad == 0 and read_lines([at.encode()]).bad == 0
    assert read_lines([past]).bad == 1 and read_lines([past.encode()]).bad == 1


def test_bytes_that_are_not_utf8_are_a_bad_line() -> None:
    rec = read_lines([b'{"event": "\xff"}', *(x.encode() for x in LINES)])
    assert rec.bad == 1 and len(rec.events) == len(LINES)


def old_start(scenario: object) -> dict:
    return {"event": "run_started", "run": 1, "world_size": 2, "steps": 1, "scenario": scenario}


def test_an_old_mlp_run_gets_its_own_parameters_named() -> None:
    obj = old_start({"model": {"kind": "mlp", "hidden": [3]}})
    got = upgrade(obj, 0)
    assert got["cores"] == 0
    assert got["params"] == [
        {"name": "0.weight", "shape": [3, 1]},
        {"name": "0.bias", "shape": [3]},
        {"name": "2.weight", "shape": [1, 3]},
        {"name": "2.bias", "shape": [1]},
    ]


def test_an_old_run_with_no_model_table_is_the_linear_model() -> None:
    got = upgrade(old_start({}), 0)
    assert got["params"] == [
        {"name": "weight", "shape": [1, 1]},
        {"name": "bias", "shape": [1]},
    ]


def test_what_an_old_engine_wrote_is_kept() -> None:
    named = [{"name": "w", "shape": [2]}]
    got = upgrade({**old_start({}), "params": named, "cores": 4}, 0)
    assert got["params"] == named and got["cores"] == 4


def test_an_old_run_of_a_users_own_model_gets_no_parameters_made_up() -> None:
    got = upgrade(old_start({"watched": True}), 0)
    assert "params" not in got and got["cores"] == 0
    assert "params" not in upgrade(old_start(["not", "a", "table"]), 0)


def test_other_events_of_schema_0_pass_unchanged() -> None:
    obj = {"event": "params", "run": 1, "step": 0, "rank": 2, "params": {"w": [1.0]}}
    assert upgrade(dict(obj), 0) == obj


def test_every_bad_line_is_counted() -> None:
    rec = read_lines(["{oops", *LINES[:3], "[]", '{"event": "params"}', *LINES[3:]])
    assert rec.bad == 3 and rec.events == load_recording("default-run.jsonl")


@pytest.mark.parametrize("word", [["params"], 5, None, {"a": 1}])
def test_an_event_named_by_no_word_is_a_bad_line_not_a_crash(word) -> None:
    line = json.dumps({"event": word, "run": 1})
    assert read_lines([head(), line, *LINES]).bad == 1
    assert read_lines([line, *LINES]).bad == 1  # schema 0: upgraded first
    # a newer schema: what this version knows of the line is looked for (it once raised
    # TypeError for a list or a table: the whole file failed to open)
    newer = read_lines([head(schema=SCHEMA_VERSION + 1), line, *LINES])
    assert newer.left_out == 1 and newer.events == load_recording("default-run.jsonl")


def test_a_header_that_names_no_app_or_lesson_reads_as_empty() -> None:
    bare = json.dumps({"event": "recording", "format": FORMAT, "schema": SCHEMA_VERSION + 1})
    rec = read_lines([bare, *LINES])
    assert rec.app == "" and rec.lesson == ""
    assert rec.version_line().startswith(f"Event schema {SCHEMA_VERSION + 1} (ddp-viz ?) is")


def test_a_core_event_beside_a_newer_kind_is_read_as_this_schemas() -> None:
    """A file of this schema whose resuming events are newer: the core's own events are of
    this schema and read as such (an extra field is ignored, as in any file of this schema),
    not counted among what a newer version holds."""
    newer = {"resuming": registry.events_version("resuming") + 1}
    start = json.loads(next(x for x in LINES if "run_started" in x))
    odd = json.dumps({**start, "colour": "red"})
    rec = read_lines([head(kinds=newer), odd, *(x for x in LINES if "run_started" not in x)])
    assert rec.bad == 0 and rec.left_out == 0 and rec.version_line().endswith("what it can.")
    assert rec.events[0].kind == "run_started"


@pytest.fixture
def kinds_not_read(monkeypatch):
    """As in a process that has read no kind's folder yet: the resuming kind's event
    ``zero_consolidated`` is known only once ``registry.load()`` imports the kinds."""
    from ddp_viz.model.event_base import EVENT_TYPES

    registry.load()
    cls = EVENT_TYPES["zero_consolidated"]
    monkeypatch.delitem(EVENT_TYPES, "zero_consolidated")
    loads = []

    def load() -> None:
        loads.append(1)
        EVENT_TYPES["zero_consolidated"] = cls

    monkeypatch.setattr(registry, "load", load)
    return loads


def test_a_kinds_event_word_is_found_once_the_kinds_are_read(kinds_not_read) -> None:
    assert kind_of_word("zero_consolidated") == "resuming" and kinds_not_read
    assert kind_of_word("run_started") is None


def test_a_newer_file_shows_a_kinds_events_read_on_first_use(kinds_not_read) -> None:
    run = (DATA / "resuming-2-ranks.jsonl").read_text().splitlines()[1:]
    i = next(n for n, x in enumerate(run) if '"zero_consolidated"' in x)
    run[i] = run[i][:-1] + ', "shards_seen": 4}'  # a field of the newer version
    # the kind's event first, before any core event could have led to reading the kinds
    rec = read_lines([head(schema=SCHEMA_VERSION + 1), run[i], *run[:i], *run[i + 1 :]])
    assert rec.left_out == 1 and rec.bad == 0 and kinds_not_read
    assert rec.events[0].kind == "zero_consolidated"
    want = sum('"zero_consolidated"' in x for x in run)
    assert [e.kind for e in rec.events].count("zero_consolidated") == want > 1
