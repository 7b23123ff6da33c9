"""A kind's table of plain values at the edges of its declaration: a number with half a range
is not checked against it, a unit-less number's message, a whole number or rate declared
without its range stops the developer, and what the base class leaves to a kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.plain_table import Knob, PlainTable, knob, knob_of, read


@dataclass(frozen=True)
class Half(PlainTable):
    floor: float = knob(1.0, low=1)
    ceiling: float = knob(1.0, high=2)
    free: float = knob(0.0)
    TABLE: ClassVar[str] = "half"


def test_a_number_with_half_a_range_or_none_takes_any_number() -> None:
    t = Half.from_mapping({"floor": 0.5, "ceiling": 3.0, "free": -7})
    assert (t.floor, t.ceiling, t.free) == (0.5, 3.0, -7.0)
    assert Half.shown() == [] and Half.field_names() == {}


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (-0.75, "must be from -0.5 to 2.5, got -0.75"),
        (2.75, "must be from -0.5 to 2.5, got 2.75"),
    ],
)
def test_a_unitless_number_out_of_range_says_the_range_and_the_value(value, words) -> None:
    with pytest.raises(ScenarioError) as caught:
        read("t.x", value, float, Knob(low=-0.5, high=2.5))
    assert caught.value.field == "t.x" and str(caught.value).endswith(words)


def test_the_bounds_of_a_number_and_a_whole_number_are_inside() -> None:
    assert read("t.x", -0.5, float, Knob(low=-0.5, high=2.5)) == -0.5
    assert read("t.x", 2.5, float, Knob(low=-0.5, high=2.5)) == 2.5
    assert read("t.n", 3, int, Knob(low=3, high=5)) == 3
    assert read("t.n", 5, int, Knob(low=3, high=5)) == 5
    assert read("t.r", 0.5, float, Knob(rate=True, high=0.5)) == 0.5
    assert read("t.f", "false", bool, Knob()) is False


def test_a_whole_number_or_a_rate_without_its_range_is_a_declaration_error() -> None:
    with pytest.raises(AssertionError, match=r"t\.n: a whole number needs a range"):
        read("t.n", 1, int, Knob(low=0))
    with pytest.raises(AssertionError, match=r"t\.n: a whole number needs a range"):
        read("t.n", 1, int, Knob(high=3))
    with pytest.raises(AssertionError, match=r"t\.r: a rate needs its highest value"):
        read("t.r", 0.1, float, Knob(rate=True))


def test_a_field_without_a_knob_reads_as_an_empty_knob() -> None:
    @dataclass(frozen=True)
    class Bare(PlainTable):
        x: float = 1.0
        TABLE: ClassVar[str] = "bare"

    from dataclasses import fields

    assert knob_of(fields(Bare)[0]) == Knob()
    assert Bare.from_mapping({"x": "2.5"}).x == 2.5
    assert Bare().fixed_steps(4) is None
    assert Bare().check_scenario(None) is None  # type: ignore[arg-type]
    assert Bare.trains is True


def test_a_knob_gives_its_field_the_default_and_the_knob_declared() -> None:
    # declared here, inside the test, so that the declaration itself runs under test
    @dataclass(frozen=True)
    class Made(PlainTable):
        n: int = knob(4, low=1, high=9, label="N", tip="how many")
        x: float = knob(0.5)
        TABLE: ClassVar[str] = "made"

    from dataclasses import fields

    n, x = fields(Made)
    assert (n.default, x.default) == (4, 0.5) and Made() == Made(4, 0.5)
    assert knob_of(n) == Knob(low=1, high=9, label="N", tip="how many")
    assert knob_of(x) == Knob()
    assert Made.from_mapping({"n": 9}).n == 9 and Made.field_names() == {"made.n": "N"}
