"""Reading a recording: its header, its schema version, and the upgrades from older ones (pure).

A recording is the header line (:mod:`ddp_viz.model.recording_format`) and events, one JSON
object per line. :func:`read_lines` reads one of any version:

* this schema: every line is decoded and validated as it is;
* an older one (a file without a header is schema 0): each line is upgraded by
  :data:`UPGRADES`, one explicit step per version, from the version it was written in up to
  this one, then decoded; what an old file lacks is filled in there and nowhere else;
* a newer one: what this ddp-viz knows is shown; events of kinds it does not know and fields
  it does not know are left out, counted, and said (:meth:`Recording.version_line`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ddp_viz.model import json_text, protocol, registry
from ddp_viz.model.event_base import EVENT_TYPES, Event
from ddp_viz.model.fieldcheck import ProtocolError
from ddp_viz.model.modelspec import ModelSpec
from ddp_viz.model.recording_format import (
    FORMAT,
    HEADER_KIND,
    SCHEMA_VERSION,
    RecordingHeader,
)


def _upgrade_0_to_1(obj: dict[str, Any]) -> dict[str, Any]:
    """Schema 0 (no header, before versioned recordings) to 1: ``run_started`` always names
    the model's parameters (derived from the scenario's ``[model]`` when the engine did not
    write them) and the cores the ranks could run on (0: not known). Bare ``NaN`` tokens need
    no step: Python's JSON reader takes them, and writing again gives the words."""
    if obj.get("event") == "run_started":
        obj.setdefault("cores", 0)
        scenario = obj.get("scenario")
        if not obj.get("params") and isinstance(scenario, dict) and not _foreign(scenario):
            spec = ModelSpec.from_mapping(scenario.get("model", {"kind": "linear"}))
            obj["params"] = [{"name": p.name, "shape": list(p.shape)} for p in spec.parameters()]
    return obj


def _foreign(scenario: dict[str, Any]) -> bool:
    """Does a run of ``scenario`` train a model not of ddp-viz's (its ``[model]`` says nothing)?"""
    return any(k.foreign_model and k.owns(scenario) for k in registry.kinds())


def _upgrade_1_to_2(obj: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 to 2 only added kinds of run (their tables and events): a line written in 1
    is already a valid line of 2."""
    return obj


def _upgrade_2_to_3(obj: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 to 3 only added the watch doctor's events: a line written in 2 is already a
    valid line of 3 (a watched run recorded before simply has no findings)."""
    return obj


def _upgrade_3_to_4(obj: dict[str, Any]) -> dict[str, Any]:
    """Schema 3 to 4 added a watched run's failures and exits, and a field with a default
    (an older line lacks it and decodes with the default): a line of 3 is a line of 4."""
    return obj


def _upgrade_4_to_5(obj: dict[str, Any]) -> dict[str, Any]:
    """Schema 4 to 5 only added the mixed-precision and restart lessons' events: a line of 4
    is a line of 5."""
    return obj


def _upgrade_5_to_6(obj: dict[str, Any]) -> dict[str, Any]:
    """Schema 5 to 6 put each kind's version of its own events in the header; a header of 5
    names none, so every kind's events in it are their version 1: an event of 5 is an event
    of 6."""
    return obj


# the step from each version to the next: a new schema version adds its step here
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    0: _upgrade_0_to_1,
    1: _upgrade_1_to_2,
    2: _upgrade_2_to_3,
    3: _upgrade_3_to_4,
    4: _upgrade_4_to_5,
    5: _upgrade_5_to_6,
}


@dataclass
class Recording:
    events: list[Event]
    bad: int = 0  # lines that are not valid events (skipped)
    schema: int = 0  # the version it was written in (0: no header)
    lesson: str | None = None  # the header's lesson (None: schema 0, the reader decides)
    app: str = ""  # the ddp-viz that wrote it
    left_out: int = 0  # of a newer schema: events and fields this ddp-viz does not know
    kinds: dict[str, int] = field(default_factory=dict)  # each kind's events' version

    @property
    def newer(self) -> bool:
        return self.schema > SCHEMA_VERSION

    def newer_kinds(self) -> dict[str, int]:
        """The kinds whose events were written in a version this ddp-viz does not know (a kind
        it does not have at all among them), with that version."""
        return {
            k: v
            for k, v in self.kinds.items()
            if registry.get(k) is None or v > registry.events_version(k)
        }

    def version_line(self) -> str:
        """One plain sentence about the recording's version for the status line ("" for this
        version's)."""
        newer = self.newer_kinds()
        lost = f", {self.left_out} unknown event(s)/field(s) left out"
        if newer and not self.newer:
            said = ", ".join(
                f"{k} {v} (here {registry.events_version(k)})"
                if registry.get(k) is not None
                else f"{k} {v} (not a kind this ddp-viz has)"
                for k, v in sorted(newer.items())
            )
            return (
                f"Events of a newer version than this ddp-viz reads: {said}; showing what it "
                "can" + (lost if self.left_out else "") + "."
            )
        if self.newer:
            return (
                f"Event schema {self.schema} (ddp-viz {self.app or '?'}) is newer than this "
                f"ddp-viz's ({SCHEMA_VERSION}): showing what it can"
                + (lost if self.left_out else "")
                + "."
            )
        if self.schema == 0:
            return (
                "Recorded before versioned recordings (schema 0): upgraded to schema "
                f"{SCHEMA_VERSION}."
            )
        if self.schema < SCHEMA_VERSION:
            return f"Event schema {self.schema}: upgraded to schema {SCHEMA_VERSION}."
        return ""


def upgrade(
    obj: dict[str, Any], schema: int, kinds: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """One event of a recording in ``schema`` whose kinds wrote their events in the versions
    ``kinds`` names (a kind not named: 1), as this version writes it: the core's steps, then
    its kind's own."""
    for version in range(schema, SCHEMA_VERSION):
        obj = UPGRADES[version](obj)
    kind = kind_of_word(obj.get("event"))
    steps = None if kind is None else registry.get(kind)
    if steps is not None:
        for version in range((kinds or {}).get(steps.id, 1), steps.events_version):
            obj = steps.upgrades[version](obj)
    return obj


def _event_class(word: object) -> type[Event] | None:
    """The event called ``word`` (None: no event of this ddp-viz, or not a word at all: a
    list or a table must not raise, a line of it is left out). A kind defines its events in
    its own folder, so they are known once the kinds are read, on first use."""
    if not isinstance(word, str):
        return None
    if word not in EVENT_TYPES:
        registry.load()
    return EVENT_TYPES.get(word)


def kind_of_word(word: object) -> str | None:
    """The kind that defines the event called ``word`` (None: the core's, or none known)."""
    cls = _event_class(word)
    return None if cls is None else registry.events_kind(cls)


def _known_part(obj: dict[str, Any]) -> tuple[Event | None, int]:
    """An event of a newer schema: what this version knows of it, and how much was left out."""
    cls = _event_class(obj.get("event"))
    if cls is None:
        return None, 1
    names = {f.name for f in fields(cls)} | {"event"}
    kept = {k: v for k, v in obj.items() if k in names}
    return protocol.from_dict(kept), len(obj) - len(kept)


def _of_newer_kind(obj: dict[str, Any], newer: set[str]) -> bool:
    """An event of a kind written in a newer version (``newer``, not empty), or one this
    ddp-viz does not know at all: of one of those kinds, a new event or a kind it lacks."""
    kind = kind_of_word(obj.get("event"))
    if kind is None:  # a word no kind here defines: a newer kind's, since one is
        return obj.get("event") not in EVENT_TYPES
    return kind in newer


def _header_of(obj: Any) -> RecordingHeader | None:
    if not isinstance(obj, dict) or obj.get("event") != HEADER_KIND:
        return None
    if obj.get("format") != FORMAT:
        raise ProtocolError(f"not a ddp-viz recording: format {obj.get('format')!r}")
    schema = obj.get("schema")
    if type(schema) is not int or schema < 0:
        raise ProtocolError(f"recording header: schema {schema!r} is not a version number")
    said = obj.get("kinds", {})
    if not isinstance(said, dict) or not all(
        isinstance(k, str) and type(v) is int and v >= 1 for k, v in said.items()
    ):
        raise ProtocolError(f"recording header: kinds {said!r} is not a version per kind")
    # a newer header may say more: only what this version knows of it
    app, lesson = str(obj.get("app", "")), str(obj.get("lesson", ""))
    return RecordingHeader(FORMAT, schema, app, lesson, dict(said))


def read_lines(lines: Iterable[bytes | str]) -> Recording:
    """The events of a recording of any schema version (see the module's text). The header
    is the first line; a second one is ignored."""
    rec = Recording(events=[])
    seen_header, newer = False, set()
    for raw in lines:
        if not raw.strip():
            continue
        try:
            if len(raw) > protocol.MAX_LINE_BYTES:
                raise ProtocolError("line too long")
            obj = json_text.loads(raw)
            head = _header_of(obj)
            if head is not None:
                if not seen_header:
                    seen_header = True
                    rec.schema, rec.app, rec.lesson = head.schema, head.app, head.lesson
                    rec.kinds = head.kinds
                    newer = set(rec.newer_kinds())
                continue
            if not isinstance(obj, dict):
                raise ProtocolError("an event must be a JSON object")
            if rec.newer or (newer and _of_newer_kind(obj, newer)):
                event, lost = _known_part(obj)
                rec.left_out += lost
                if event is not None:
                    rec.events.append(event)
                continue
            rec.events.append(protocol.from_dict(upgrade(obj, rec.schema, rec.kinds)))
        except (ProtocolError, ValueError, UnicodeDecodeError):
            rec.bad += 1
    return rec
