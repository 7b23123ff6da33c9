"""Decoded JSON checked against a dataclass's annotations, type by type, on a class written
here: each annotation accepts what it declares and refuses its nearest wrong value with a
message naming the field; ints where floats are declared become floats, and the format's words
for non-finite numbers become those numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

import pytest

from ddp_viz.model import fieldcheck
from ddp_viz.model.fieldcheck import ProtocolError, checked_fields


@pytest.fixture(autouse=True)
def compiled_afresh(monkeypatch):
    """Each test compiles its class's checks itself: the compiled checks are cached per class
    for the life of the process, so a test run after another that used the class would
    otherwise test the first one's compilation, not this code's."""
    monkeypatch.setattr(fieldcheck, "_COMPILED", {})


class _Keys(TypedDict):
    shape: list[int]
    norm: float


class Summary(_Keys, total=False):  # as the protocol declares one: total=False for the rest
    digest: str


@dataclass
class Every:
    count: int
    value: float
    word: str
    anything: Any = None
    values: list[float] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    table: dict[str, Any] = field(default_factory=dict)
    by_rank: dict[int, Any] = field(default_factory=dict)
    norms: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    state: Literal["ready", "gone", 1] = "ready"
    maybe: int | None = None
    tensor: list[float] | Summary | None = None
    either: int | float = 0
    nothing: None = None
    flag: bool = False
    summary: Summary | None = None


BASE = {"count": 1, "value": 2.5, "word": "w"}


def check(**changes: Any) -> dict[str, Any]:
    return checked_fields(Every, {**BASE, **changes}, "thing")


def refused(**changes: Any) -> str:
    with pytest.raises(ProtocolError) as caught:
        check(**changes)
    return str(caught.value)


def test_a_missing_required_field_is_named_and_a_missing_optional_one_is_left_out() -> None:
    with pytest.raises(ProtocolError) as caught:
        checked_fields(Every, {"count": 1, "word": "w"}, "thing")
    assert str(caught.value) == "thing: missing field 'value'"
    assert check() == {"count": 1, "value": 2.5, "word": "w"}


def test_a_wrong_type_names_the_field_and_shows_the_value_cut_at_80_characters() -> None:
    assert refused(count="1") == "thing: field 'count' has the wrong type ('1')"
    long = "x" * 200
    assert refused(count=long) == f"thing: field 'count' has the wrong type ({repr(long)[:80]})"


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("count", [0, -3], [1.0, True, "1", None]),
        ("value", [1, 1.5, "NaN", "Infinity", "-Infinity"], ["nan", "1.5", None, [1.0]]),
        ("word", ["", "x"], [1, None, b"x"]),
        ("anything", [None, 1, "x", [1], {"a": 1}], []),
        ("values", [[], [1.0, 2], [1.0, "NaN"]], [[1.0, "1"], [None], (1.0,), {"a": 1.0}]),
        ("items", [[], [1, "x", None]], [(1,), {"a": 1}, "x"]),
        ("counts", [[], [1, 2]], [[1.0], [1, "2"], (1,)]),
        ("names", [[], ["a"]], [[1], ["a", None]]),
        ("table", [{}, {"a": 1, "b": [2]}], [{1: 1}, [("a", 1)], None]),
        ("by_rank", [{}, {0: "a"}], [{"0": "a"}, [], None]),
        ("norms", [{}, {"a": 1, "b": "NaN"}], [{"a": "x"}, {1: 1.0}, [1.0]]),
        ("labels", [{}, {"a": "b"}], [{"a": 1}, {1: "b"}]),
        ("state", ["ready", "gone", 1], ["Ready", "other", True, 1.0, None]),
        ("maybe", [None, 3], [3.0, "3"]),
        ("tensor", [None, [1.0, 2], {"shape": [2], "norm": 1}], [{"shape": [2]}, "x", [1, "x"]]),
        ("either", [1, 1.5, "NaN"], ["1", None, [1]]),
        ("nothing", [None], [0, "", []]),
        ("flag", [True, False], [1, "true", None]),
        (
            "summary",
            [{"shape": [2], "norm": 1.0}, {"shape": [], "norm": 2, "digest": "d", "extra": 1}],
            [{"shape": [2]}, {"norm": 1.0}, {"shape": [2.0], "norm": 1.0}, [1.0], "s"],
        ),
    ],
)
def test_each_annotation_takes_what_it_declares_and_refuses_the_rest(name, good, bad) -> None:
    for value in good:
        assert name in check(**{name: value}), (name, value)
    for value in bad:
        assert refused(**{name: value}).startswith(f"thing: field {name!r} has the wrong type")


def test_a_typed_dicts_known_keys_are_checked_and_its_other_keys_kept() -> None:
    assert refused(summary={"shape": [2], "norm": 1.0, "digest": 3}).startswith(
        "thing: field 'summary'"
    )
    got = check(summary={"shape": [2], "norm": 1, "note": "kept"})["summary"]
    assert got == {"shape": [2], "norm": 1.0, "note": "kept"}
    assert type(got["norm"]) is float


def test_numbers_declared_as_floats_become_floats_and_words_their_numbers() -> None:
    got = check(
        value=3,
        values=[1, 2.5, "NaN", "-Infinity"],
        norms={"a": 2, "b": "Infinity"},
        tensor={"shape": [2], "norm": 4},
        either=2,
        counts=[1, 2],
        table={"a": 1},
    )
    assert type(got["value"]) is float and got["value"] == 3.0
    assert got["values"][:2] == [1.0, 2.5] and all(type(v) is float for v in got["values"])
    assert math.isnan(got["values"][2]) and got["values"][3] == -math.inf
    assert got["norms"] == {"a": 2.0, "b": math.inf} and type(got["norms"]["a"]) is float
    assert got["tensor"] == {"shape": [2], "norm": 4.0} and type(got["tensor"]["norm"]) is float
    assert got["counts"] == [1, 2] and got["table"] == {"a": 1}
    assert got["either"] == 2 and type(got["either"]) is int  # an int is an int first
    assert math.isnan(check(either="NaN")["either"])  # then a number: the word read
    assert check(value="NaN")["value"] != check(value="NaN")["value"]  # a NaN, not the word
    assert check(tensor=[1, 2])["tensor"] == [1.0, 2.0]
    assert all(type(v) is float for v in check(tensor=[1, 2])["tensor"])
    assert check(tensor=None)["tensor"] is None
    already = [1.0, 2.0]
    assert check(values=already)["values"] is already  # floats already: kept as decoded
