"""One scenario value checked on its own (model/values.py, pure): what each accepts, both sides
of every bound (just inside, just past), and the whole message the form shows, field first."""

from __future__ import annotations

import math

import pytest

from ddp_viz.model import values
from ddp_viz.model.errors import ScenarioError


def refused(call, *args) -> str:
    """The whole message of the error ``call(*args)`` raises, checked to name its field."""
    with pytest.raises(ScenarioError) as caught:
        call(*args)
    assert caught.value.field == args[0]
    assert str(caught.value) == f"{args[0]}: {caught.value.message}"
    return caught.value.message


@pytest.mark.parametrize(
    ("given", "read"),
    [(True, True), (False, False), ("true", True), ("false", False), (" TRUE ", True)],
)
def test_a_flag_reads_a_bool_or_its_word_in_any_case_and_spacing(given, read) -> None:
    assert values.flag("ddp.find_unused", given) is read


@pytest.mark.parametrize(
    ("given", "said"),
    [("yes", "'yes'"), (1, "1"), ("", "''"), (None, "None"), ("ture", "'ture'")],
)
def test_a_flag_refuses_anything_else_quoting_it(given, said) -> None:
    assert refused(values.flag, "ddp.find_unused", given) == f"must be true or false, got {said}"


@pytest.mark.parametrize(
    ("given", "read"),
    [(1, 1), (8, 8), (3.0, 3), ("4", 4), ("7.0", 7), (" 2 ", 2)],
)
def test_a_whole_number_in_its_range_is_read_at_both_ends(given, read) -> None:
    got = values.whole("world_size", given, 1, 8)
    assert got == read and type(got) is int


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (0, "must be a whole number from 1 to 8, got 0"),  # just below
        (9, "must be a whole number from 1 to 8, got 9"),  # just above
        (2.5, "must be a whole number from 1 to 8, got 2.5"),
        ("9", "must be a whole number from 1 to 8, got 9"),
        ("two", "must be a whole number, got 'two'"),
        (True, "must be a whole number, got True"),  # a bool is no number of ranks
        ([2], "must be a whole number, got [2]"),
        (None, "must be a whole number, got None"),
    ],
)
def test_a_whole_number_out_of_range_or_not_a_number_is_refused(given, said) -> None:
    assert refused(values.whole, "world_size", given, 1, 8) == said


def test_a_whole_numbers_range_is_written_with_thousands_separators() -> None:
    said = refused(values.whole, "steps", 20001, 1, 20000)
    assert said == "must be a whole number from 1 to 20,000, got 20001"
    assert values.whole("steps", 20000, 1, 20000) == 20000


@pytest.mark.parametrize(("given", "read"), [("a", "a"), ("c", "c")])
def test_a_choice_is_one_of_its_words(given, read) -> None:
    assert values.choice("model.kind", given, ("a", "b", "c")) == read


def test_a_choice_refuses_another_word_listing_the_allowed_ones() -> None:
    said = refused(values.choice, "model.kind", "d", ("a", "b", "c"))
    assert said == "must be one of a, b, c, got 'd'"


@pytest.mark.parametrize(
    ("given", "read"),
    [(3, 3.0), (-0.25, -0.25), ("0.01", 0.01), (" -2.5 ", -2.5), ("1e-3", 0.001)],
)
def test_a_number_reads_ints_floats_and_their_text(given, read) -> None:
    got = values.number("lr", given)
    assert got == read and type(got) is float


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (True, "must be a number, got True"),
        ("", "must be a number, got an empty value"),
        ("   ", "must be a number, got an empty value"),
        ("abc", "must be a number, got 'abc'"),
        ("0,01", "must be a number, got '0,01' (use a dot for decimals: 0.01)"),
        (" 1,5 ", "must be a number, got '1,5' (use a dot for decimals: 0.01)"),
        ([1], "must be a number, got list"),
        (None, "must be a number, got NoneType"),
        (math.inf, "must be a finite number, got inf"),
        ("nan", "must be a finite number, got nan"),
        (-math.inf, "must be a finite number, got -inf"),
    ],
)
def test_a_number_refuses_what_is_not_one_and_says_why(given, said) -> None:
    assert refused(values.number, "lr", given) == said


def test_a_number_names_what_it_wanted() -> None:
    assert refused(values.number, "seed", "x", "a seed") == "must be a seed, got 'x'"
    assert refused(values.number, "seed", "", "a seed") == "must be a seed, got an empty value"
    assert refused(values.number, "seed", False, "a seed") == "must be a seed, got False"
    assert refused(values.number, "seed", {}, "a seed") == "must be a seed, got dict"


@pytest.mark.parametrize(("given", "read"), [(4, 4), ("-3", -3), (2.0, 2), (" 6.0 ", 6)])
def test_an_integer_is_any_whole_number(given, read) -> None:
    got = values.integer("seed", given)
    assert got == read and type(got) is int


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (2.5, "must be a whole number, got 2.5"),
        ("0.125", "must be a whole number, got 0.125"),
        ("x", "must be a whole number, got 'x'"),  # number()'s message names the whole number
        (True, "must be a whole number, got True"),
    ],
)
def test_an_integer_refuses_a_fraction(given, said) -> None:
    assert refused(values.integer, "seed", given) == said


def test_wholes_reads_the_keys_the_table_holds_each_in_its_range() -> None:
    ranges = (("hidden", 1, 64), ("layers", 1, 4), ("width", 2, 9))
    assert values.wholes({"hidden": "8", "layers": 4}, "model", ranges) == {
        "hidden": 8,
        "layers": 4,
    }
    assert values.wholes({}, "model", ranges) == {}
    with pytest.raises(ScenarioError) as caught:
        values.wholes({"hidden": 8, "width": 10}, "model", ranges)
    assert str(caught.value) == "model.width: must be a whole number from 2 to 9, got 10"


@pytest.mark.parametrize(("given", "read"), [(1.0, 1.0), (1e-9, 1e-9), ("0.5", 0.5)])
def test_a_rate_is_above_zero_and_at_most_its_high(given, read) -> None:
    assert values.rate("lr", given, 1.0) == read


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (0, "must be above 0 and at most 1, got 0"),
        (-0.1, "must be above 0 and at most 1, got -0.1"),
        (1.0001, "must be above 0 and at most 1, got 1.0001"),
        ("2", "must be above 0 and at most 1, got 2"),
        ("x", "must be a number, got 'x'"),
    ],
)
def test_a_rate_at_zero_or_past_its_high_is_refused(given, said) -> None:
    assert refused(values.rate, "lr", given, 1.0) == said
