"""Small pieces of the format and its docs, each held to what it says: the header a recording
starts with, non-finite numbers as words however deep, JSON read fast or by the standard
library's rules, the scenario error's parts, event classes registering their words, and the
list of kinds made from the registry."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import ClassVar

import pytest

from ddp_viz import __version__
from ddp_viz.model import json_text, registry
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.event_base import EVENT_TYPES, DuplicateEventKind, Event
from ddp_viz.model.kinds_doc import CORE_QUANTITIES, first_sentence, kinds_markdown
from ddp_viz.model.quiz import COUNTS, REVEALED_IN
from ddp_viz.model.recording_format import (
    FORMAT,
    HEADER_KIND,
    SCHEMA_VERSION,
    finite_word,
    header,
    strict,
)


def test_the_header_names_the_format_schema_app_lesson_and_each_kinds_version() -> None:
    h = header("buckets")
    assert (h.kind, h.format, h.schema, h.app, h.lesson) == (
        "recording",
        "ddp-viz-events",
        6,
        __version__,
        "buckets",
    )
    assert (HEADER_KIND, FORMAT, SCHEMA_VERSION) == ("recording", "ddp-viz-events", 6)
    assert h.kinds == registry.event_versions() and h.kinds["resuming"] == 2


def test_a_non_finite_number_becomes_its_word_however_deep() -> None:
    assert finite_word(1.5) == 1.5 and finite_word(-0.0) == 0.0
    assert finite_word(math.nan) == "NaN"
    assert finite_word(math.inf) == "Infinity" and finite_word(-math.inf) == "-Infinity"
    value = {"a": [1.0, (math.nan, {"b": -math.inf})], "c": "NaN", "d": 3, "e": True, "f": None}
    assert strict(value) == {
        "a": [1.0, ["NaN", {"b": "-Infinity"}]],
        "c": "NaN",
        "d": 3,
        "e": True,
        "f": None,
    }
    assert strict(math.inf) == "Infinity" and strict("x") == "x"
    assert strict(True) is True and strict(1) == 1  # not floats: left alone


def test_json_is_read_as_the_standard_library_reads_it_literals_and_errors_alike() -> None:
    assert json_text.loads('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    assert json_text.loads(b"[1]") == [1]
    back = json_text.loads('{"a": NaN, "b": -Infinity}')  # an older recording's literals
    assert math.isnan(back["a"]) and back["b"] == -math.inf
    with pytest.raises(json.JSONDecodeError) as caught:
        json_text.loads('{"a": 1,}')
    assert caught.value.msg == "Expecting property name enclosed in double quotes"
    assert caught.value.colno == 9


def test_a_scenario_error_carries_its_field_and_message_and_says_both() -> None:
    e = ScenarioError("model.hidden[0]", "must be a whole number")
    assert (e.field, e.message, str(e)) == (
        "model.hidden[0]",
        "must be a whole number",
        "model.hidden[0]: must be a whole number",
    )
    assert isinstance(e, ValueError)


def test_an_event_class_registers_its_word_and_a_second_class_for_it_is_refused() -> None:
    @dataclass(frozen=True)
    class ToyWord(Event):
        kind: ClassVar[str] = "toy_word_h4"
        n: int

    try:
        assert EVENT_TYPES["toy_word_h4"] is ToyWord

        @dataclass(frozen=True)
        class Abstract(Event):  # no word of its own: not registered
            pass

        assert Abstract not in EVENT_TYPES.values()

        @dataclass(frozen=True)
        class Keeps(ToyWord):  # keeps its parent's word without claiming it
            pass

        assert EVENT_TYPES["toy_word_h4"] is ToyWord
        with pytest.raises(DuplicateEventKind) as caught:

            @dataclass(frozen=True)
            class Other(Event):
                kind: ClassVar[str] = "toy_word_h4"

        where = f"{ToyWord.__module__}.{ToyWord.__qualname__}"
        assert str(caught.value) == f"event kind 'toy_word_h4' is already {where}"
    finally:
        EVENT_TYPES.pop("toy_word_h4", None)


def test_a_docstrings_first_sentence_on_one_line() -> None:
    def doc(text):
        def f():
            pass

        f.__doc__ = text
        return f

    assert first_sentence(doc(None)) == ""
    assert first_sentence(doc("")) == ""
    assert first_sentence(doc("the ``x`` of\n   a step. More here.")) == "The `x` of a step."
    assert first_sentence(doc("A prediction's number: how many. Then.")) == "How many."
    assert first_sentence(doc("no end")) == "No end"
    assert first_sentence(doc("e.g.x then. b")) == "E.g.x then."
    assert (
        first_sentence(doc("one. two. three.")) == "One."
    )  # the first sentence, not all but the last


def test_the_kinds_list_says_each_core_quantity_and_each_kind_with_its_scenes() -> None:
    lines = kinds_markdown().splitlines()
    assert kinds_markdown().endswith("\n")
    assert lines[0] == "The core's quiz quantities (`what` in `[question.quantity]`):"
    assert lines[1] == ""
    for name, words in CORE_QUANTITIES.items():
        unit = f" ({COUNTS[name]})" if name in COUNTS else ""
        assert f"- `{name}`{unit}: {words}; shown in phase `{REVEALED_IN[name]}`" in lines
    assert "- `loss`: the rank's loss in that step; shown in phase `local`" in lines
    at = lines.index("The kinds (`kind` in lesson.toml; `scene` names one of their scenes):")
    assert at == 2 + len(CORE_QUANTITIES) + 1 and lines[at - 1] == "" and lines[at + 1] == ""
    heads = [line for line in lines if line.startswith("- **`")]
    assert heads == sorted(heads) and len(heads) == len(list(registry.kinds()))
    assert "- **`collective`**: a run whose scenario has `[collective]`." in lines
    assert "- **`bucket_timeline`**: a part of every run." in lines
    assert "- **`ddp_step`**: DDP training, the default the other kinds add to." in lines
    assert "- **`data_split`**: a run its scenario claims." in lines
    ring = registry.get("collective").scenes["ring"]
    assert f"  - scene `ring`: {first_sentence(ring)}" in lines
    q = registry.get("accumulation").quantities["allreduces"]
    said = first_sentence(q.read)
    assert f"  - quantity `allreduces` ({q.unit}): {said} Shown in phase `{q.phase}`." in lines
    assert "(undocumented)" not in kinds_markdown()


def test_a_scene_or_quantity_without_a_docstring_is_listed_as_undocumented(monkeypatch) -> None:
    def bare():
        pass

    def said():
        """the bytes. More."""

    quantities = {
        "plain": SimpleNamespace(unit="", read=bare, phase="local"),
        "sized": SimpleNamespace(unit="bytes", read=said, phase="averaged"),
    }
    kind = SimpleNamespace(
        id="toy", table="toy", default=False, every_run=False, scenes={"s": bare},
        quantities=quantities,
    )  # fmt: skip
    monkeypatch.setattr(registry, "kinds", lambda: [kind])
    lines = kinds_markdown().splitlines()
    assert lines[-4:] == [
        "- **`toy`**: a run whose scenario has `[toy]`.",
        "  - scene `s`: (undocumented)",
        "  - quantity `plain`: (undocumented) Shown in phase `local`.",
        "  - quantity `sized` (bytes): The bytes. Shown in phase `averaged`.",
    ]


def test_with_orjson_installed_the_standard_library_reads_only_what_orjson_refuses(
    monkeypatch,
) -> None:
    # orjson read the window's lines about seven times faster (json_text's docstring): a line
    # it reads must not go to json.loads
    pytest.importorskip("orjson")
    asked = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda text: asked.append(text) or real(text))
    assert json_text.loads('{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    assert asked == []
    assert math.isnan(json_text.loads('{"a": NaN}')["a"])  # orjson refuses the literal
    assert asked == ['{"a": NaN}']
