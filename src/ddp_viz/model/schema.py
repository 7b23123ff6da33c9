"""The event format as JSON Schema (draft 2020-12), generated from the event classes (pure).

The same annotations that :mod:`ddp_viz.model.fieldcheck` validates events against make the
schema, so the two cannot drift: every event kind (and the header line) is one definition, an
object whose ``event`` is its word, whose fields are its dataclass fields (required when they
have no default) and which has no other fields. ``ddp-viz schema`` prints it;
:func:`markdown` renders it as the event format's documentation (``docs/events.md``).
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from dataclasses import MISSING, fields
from typing import Any

from ddp_viz.model import protocol, registry
from ddp_viz.model.event_base import EVENT_TYPES, Event, TensorSummary, Values
from ddp_viz.model.recording_format import (
    FORMAT,
    HEADER_KIND,
    NON_FINITE,
    SCHEMA_VERSION,
    strict,
)

DRAFT = "https://json-schema.org/draft/2020-12/schema"

_DEFS: dict[str, Any] = {
    "number": {
        "description": "A number; one that is not finite is written as the string "
        '"NaN", "Infinity" or "-Infinity" (never a bare NaN token: every line is strict JSON).',
        "anyOf": [{"type": "number"}, {"enum": list(NON_FINITE)}],
    },
}


CORE = ""  # ``of``: the core's events and the header only


def event_classes(of: str | None = None) -> dict[str, type[Event]]:
    """Every event kind this ddp-viz knows, the header first, then by word; ``of`` a kind's id:
    that kind's own events only, each kind versioning its own; :data:`CORE`: the core's."""
    registry.load()
    assert protocol.EVENT_TYPES is EVENT_TYPES  # the core's events are defined
    ordered = sorted(EVENT_TYPES.items(), key=lambda kv: (kv[0] != HEADER_KIND, kv[0]))
    if of is not None:
        ordered = [(w, c) for w, c in ordered if (registry.events_kind(c) or CORE) == of]
    return dict(ordered)


def type_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema of one annotation."""
    if tp is Any:
        return {}
    if tp == Values:
        return {"$ref": "#/$defs/tensor"}
    if tp is TensorSummary:
        return {"$ref": "#/$defs/tensor_summary"}
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [type_schema(a) for a in typing.get_args(tp)]}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(tp))}
    if tp is type(None):
        return {"type": "null"}
    if tp is float:
        return {"$ref": "#/$defs/number"}
    simple = {bool: "boolean", int: "integer", str: "string"}
    if tp in simple:
        return {"type": simple[tp]}
    if origin is list:
        (item,) = typing.get_args(tp)
        return {"type": "array"} | ({} if item is Any else {"items": type_schema(item)})
    if origin is dict:
        _, item = typing.get_args(tp)
        return {"type": "object"} | (
            {} if item is Any else {"additionalProperties": type_schema(item)}
        )
    if typing.is_typeddict(tp):
        return _object_of(tp)
    raise TypeError(f"no JSON Schema for the annotation {tp!r}")


def _summary(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    if doc.startswith(f"{cls.__name__}("):  # the dataclass's generated signature, not a text
        return ""
    return " ".join(doc.split())


def event_schema(kind: str, cls: type[Event]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {"event": {"const": kind}}
    required = ["event"]
    for f in fields(cls):
        props[f.name] = type_schema(hints[f.name])
        if f.default is MISSING and f.default_factory is MISSING:
            required.append(f.name)
        elif f.default is not MISSING:
            props[f.name]["default"] = strict(f.default)
    out: dict[str, Any] = {"title": kind, "type": "object"}
    if text := _summary(cls):
        out["description"] = text
    return out | {"properties": props, "required": required, "additionalProperties": False}


def schema(of: str | None = None) -> dict[str, Any]:
    """The whole format: one line of a recording is exactly one of the event kinds (``of``:
    the core's part, or one kind's, as :func:`event_classes`)."""
    events = event_classes(of)
    defs = dict(_DEFS)
    defs["tensor_summary"] = _object_of(TensorSummary)
    defs["tensor"] = {
        "description": "A tensor: its values flattened, up to 64; a summary above.",
        "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/number"}}, _ref("tensor_summary")],
    }
    for kind, cls in events.items():
        defs[f"event.{kind}"] = event_schema(kind, cls)
    if of:  # a kind's part: named by the kind and its own version
        version = registry.events_version(of)
        where, title = f"{of}/{version}", f"{FORMAT}, the events of kind {of}, version {version}"
    else:
        where, title = f"{SCHEMA_VERSION}", f"{FORMAT}, schema version {SCHEMA_VERSION}"
    return {
        "$schema": DRAFT,
        "$id": f"https://ddp-viz.invalid/{FORMAT}/{where}",
        "title": title,
        "description": "One line of a ddp-viz recording (JSON lines): the header line "
        f'("event": "{HEADER_KIND}") first, then events.',
        "oneOf": [_ref(f"event.{kind}") for kind in events],
        "$defs": defs,
    }


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _object_of(td: Any) -> dict[str, Any]:
    """A TypedDict: an object with its keys, no others."""
    hints = typing.get_type_hints(td)
    out: dict[str, Any] = {"type": "object"}
    if text := _summary(td):
        out["description"] = text
    return out | {
        "properties": {k: type_schema(t) for k, t in hints.items()},
        "required": sorted(td.__required_keys__),
        "additionalProperties": False,
    }


def schema_json(of: str | None = None) -> str:
    return json.dumps(schema(of), indent=2, allow_nan=False) + "\n"
