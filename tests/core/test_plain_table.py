"""A kind's table of plain values declared once (pure): every key read by its type and knob,
each message naming the field, the table written back whole, and the form's names and rows
taken from the labels. The table here is the test's own, not a kind's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.plain_table import PlainTable, knob


@dataclass(frozen=True)
class Toy(PlainTable):
    steps: int = knob(3, low=1, high=9, label="Steps", tip="how many")
    share: float = knob(0.5, low=0.1, high=0.9)
    wait: float = knob(2.0, low=1, high=30, unit="seconds", label="Wait")
    lr: float = knob(0.1, rate=True, high=1)
    fast: bool = knob(False, label="Fast")
    seed: int = knob(0, low=0, high=100)

    TABLE: ClassVar[str] = "toy"

    def check(self) -> None:
        if self.seed > self.steps * 10:
            raise ScenarioError("toy.seed", "must be at most ten times steps")


def test_a_table_reads_each_key_by_its_type_and_keeps_the_defaults_of_the_others() -> None:
    t = Toy.from_mapping({"steps": "4", "share": 0.25, "fast": "true", "lr": 1})
    assert (t.steps, t.share, t.fast, t.lr, t.wait, t.seed) == (4, 0.25, True, 1.0, 2.0, 0)
    assert Toy.from_mapping(t.to_dict()) == t
    assert list(t.to_dict()) == ["steps", "share", "wait", "lr", "fast", "seed"]
    assert Toy.from_mapping({}) == Toy()


@pytest.mark.parametrize(
    ("table", "field", "words"),
    [
        ({"steps": 0}, "toy.steps", "must be a whole number from 1 to 9, got 0"),
        ({"steps": 10}, "toy.steps", "must be a whole number from 1 to 9, got 10"),
        ({"steps": 2.5}, "toy.steps", "must be a whole number from 1 to 9, got 2.5"),
        ({"share": 0.95}, "toy.share", "must be from 0.1 to 0.9, got 0.95"),
        ({"share": 0.05}, "toy.share", "must be from 0.1 to 0.9, got 0.05"),
        ({"wait": 31}, "toy.wait", "must be from 1 to 30 seconds, got 31"),
        ({"lr": 0}, "toy.lr", "must be above 0 and at most 1, got 0"),
        ({"lr": 1.5}, "toy.lr", "must be above 0 and at most 1, got 1.5"),
        ({"fast": "yes"}, "toy.fast", "must be true or false, got 'yes'"),
        ({"colour": 1}, "toy.colour", "unknown key; allowed: steps, share, wait, lr, fast, seed"),
        ({"steps": 1, "seed": 11}, "toy.seed", "must be at most ten times steps"),
    ],
)
def test_each_bad_value_is_refused_naming_its_field(table, field, words) -> None:
    with pytest.raises(ScenarioError) as caught:
        Toy.from_mapping(table)
    assert caught.value.field == field and str(caught.value).endswith(words), str(caught.value)


def test_the_bounds_themselves_are_allowed() -> None:
    t = Toy.from_mapping({"steps": 9, "share": 0.9, "wait": 1, "lr": 1, "seed": 90})
    assert (t.steps, t.share, t.wait, t.lr, t.seed) == (9, 0.9, 1.0, 1.0, 90)


def test_the_form_shows_the_labelled_keys_in_order_under_their_labels() -> None:
    assert [(key, kind, k.label) for key, kind, k in Toy.shown()] == [
        ("steps", int, "Steps"),
        ("wait", float, "Wait"),
        ("fast", bool, "Fast"),
    ]
    assert Toy.field_names() == {"toy.steps": "Steps", "toy.wait": "Wait", "toy.fast": "Fast"}
    assert Toy.shown()[0][2].tip == "how many"


def test_a_table_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(ScenarioError) as caught:
        Toy.from_mapping([1, 2])
    assert caught.value.field == "toy"
