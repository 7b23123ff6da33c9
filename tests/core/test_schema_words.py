"""The schema's prose, which the snapshots leave out and docs/events.md prints: each event's
description is its class's docstring on one line (none for a class without one), the format's
title and address per version and per kind, and an annotation with no JSON Schema named."""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pytest

from ddp_viz.model import protocol, registry
from ddp_viz.model.event_base import Event, TensorSummary
from ddp_viz.model.schema import CORE, event_schema, schema, schema_json, type_schema


def one_line(cls: type) -> str:
    return " ".join((inspect.getdoc(cls) or "").split())


def test_the_core_schemas_title_address_and_description() -> None:
    s = schema(CORE)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["$id"] == "https://ddp-viz.invalid/ddp-viz-events/6"
    assert s["title"] == "ddp-viz-events, schema version 6"
    assert s["description"] == (
        'One line of a ddp-viz recording (JSON lines): the header line ("event": "recording") '
        "first, then events."
    )
    assert s["oneOf"][0] == {"$ref": "#/$defs/event.recording"}
    assert s["$defs"]["tensor"]["description"] == (
        "A tensor: its values flattened, up to 64; a summary above."
    )
    assert s["$defs"]["number"]["description"].startswith("A number; one that is not finite")
    assert s["$defs"]["tensor_summary"]["description"] == one_line(TensorSummary)
    assert s["$defs"]["tensor_summary"]["required"] == ["norm", "shape"]


def test_a_kinds_part_is_named_by_the_kind_and_its_own_version() -> None:
    s = schema("resuming")
    assert s["$id"] == "https://ddp-viz.invalid/ddp-viz-events/resuming/2"
    assert s["title"] == "ddp-viz-events, the events of kind resuming, version 2"
    assert all(ref["$ref"].startswith("#/$defs/event.") for ref in s["oneOf"])
    assert "event.run_started" not in s["$defs"]


def test_each_events_description_is_its_docstring_on_one_line() -> None:
    defs = schema(CORE)["$defs"]
    for cls in (protocol.RunFinished, protocol.Timing, protocol.CommandError):
        assert defs[f"event.{cls.kind}"]["description"] == one_line(cls)
    assert "\n" not in defs["event.timing"]["description"]


def test_a_field_with_a_default_says_it_and_one_without_is_required() -> None:
    got = event_schema("command_error", protocol.CommandError)
    assert got["title"] == "command_error" and got["type"] == "object"
    assert got["properties"]["field"] == {"type": "string", "default": ""}
    assert got["properties"]["event"] == {"const": "command_error"}
    assert got["required"] == ["event", "message"] and got["additionalProperties"] is False


@dataclass(frozen=True)
class Undocumented(Event):
    kind: ClassVar[str] = ""  # not registered: a test's own
    n: float = float("nan")
    words: list[str] | None = None


def test_a_class_without_a_docstring_has_no_description_and_a_nan_default_is_its_word() -> None:
    got = event_schema("undocumented", Undocumented)
    assert "description" not in got
    assert got["properties"]["n"] == {"$ref": "#/$defs/number", "default": "NaN"}
    assert got["properties"]["words"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
        "default": None,
    }


def test_each_annotation_has_its_schema_and_one_without_is_named() -> None:
    assert type_schema(Any) == {}
    assert type_schema(bool) == {"type": "boolean"} and type_schema(int) == {"type": "integer"}
    assert type_schema(str) == {"type": "string"} and type_schema(type(None)) == {"type": "null"}
    assert type_schema(Literal["a", 1]) == {"enum": ["a", 1]}
    assert type_schema(list[Any]) == {"type": "array"}
    assert type_schema(dict[str, Any]) == {"type": "object"}
    assert type_schema(dict[str, int]) == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert type_schema(TensorSummary) == {"$ref": "#/$defs/tensor_summary"}
    with pytest.raises(TypeError) as caught:
        type_schema(set[int])
    assert str(caught.value) == "no JSON Schema for the annotation set[int]"


def test_the_schema_text_is_indented_strict_json_ending_in_a_newline() -> None:
    text = schema_json(CORE)
    assert text.endswith("}\n") and text.startswith('{\n  "$schema": ')
    assert json.loads(text) == schema(CORE)
    assert registry.events_version("resuming") == 2
