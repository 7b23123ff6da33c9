"""What a view says where a step has no reference or no values, word for word, and the steps it
names: the rule's boundaries on both sides."""

from __future__ import annotations

from ddp_viz.model.reference import (
    nearest_reference_step,
    reference_due,
    reference_policy,
    values_due,
    values_policy,
)


def test_the_reference_sentence_word_for_word() -> None:
    assert reference_policy() == (
        "The full-batch reference is computed for steps 1–20 and then for every 100th step "
        "(100, 200, …)."
    )


def test_the_values_sentence_word_for_word() -> None:
    assert values_policy() == (
        "Gradients and parameters are recorded for steps 1–20, every 10th step and the last; "
        "the loss, buckets and timings for every step."
    )


def test_the_rules_boundaries_counted_from_zero() -> None:
    assert reference_due(19) and not reference_due(20) and reference_due(99)
    assert not reference_due(98) and not reference_due(100) and reference_due(199)
    assert values_due(19) and not values_due(20) and values_due(29) and not values_due(30)
    assert values_due(20, 21) and not values_due(20, 22) and not values_due(21, 21)


def test_the_nearest_reference_is_the_step_itself_or_the_last_one_before() -> None:
    assert [nearest_reference_step(s) for s in (0, 19, 20, 98, 99, 100, 150, 198, 199, 250)] == [
        0,
        19,
        19,
        19,
        99,
        99,
        99,
        99,
        199,
        199,
    ]
