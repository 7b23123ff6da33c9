"""Which steps get the single-process reference and which the tensor values, and what the stage
says without them."""

from __future__ import annotations

from ddp_viz.model.reference import (
    EVERY_STEP_BELOW,
    THEN_EVERY,
    VALUES_EVERY,
    nearest_reference_step,
    reference_due,
    reference_policy,
    values_at_every_step,
    values_due,
    values_policy,
)


def test_every_lesson_length_run_has_a_reference_at_every_step() -> None:
    assert all(reference_due(s) for s in range(EVERY_STEP_BELOW))
    assert EVERY_STEP_BELOW >= 20  # the lessons' runs are at most twenty steps


def test_a_long_run_has_it_at_every_nth_step_counted_from_one() -> None:
    due = [s + 1 for s in range(200) if reference_due(s)]
    later = [k for k in range(THEN_EVERY, 201, THEN_EVERY) if k > EVERY_STEP_BELOW]
    assert due == list(range(1, EVERY_STEP_BELOW + 1)) + later


def test_nearest_reference_step_is_earlier_and_has_one() -> None:
    for s in range(300):
        n = nearest_reference_step(s)
        assert n <= s and reference_due(n)
        assert not any(reference_due(k) for k in range(n + 1, s + 1))


def test_the_policy_sentence_names_the_numbers() -> None:
    text = reference_policy()
    assert f"1–{EVERY_STEP_BELOW}" in text and f"{THEN_EVERY}th" in text


def test_every_lesson_length_run_has_values_at_every_step() -> None:
    assert all(values_due(s) for s in range(EVERY_STEP_BELOW))


def test_a_long_run_has_values_at_every_tenth_step_and_at_every_reference_step() -> None:
    due = [s + 1 for s in range(300) if values_due(s)]
    later = [k for k in range(VALUES_EVERY, 301, VALUES_EVERY) if k > EVERY_STEP_BELOW]
    assert due == list(range(1, EVERY_STEP_BELOW + 1)) + later
    # the reference is checked against DDP's average: it needs the step's values
    assert all(values_due(s) for s in range(1000) if reference_due(s))
    assert sum(values_due(s) for s in range(500)) < 500 // 5  # a long run skips most steps


def test_the_last_step_of_a_run_has_values_so_a_finished_run_ends_on_its_parameters() -> None:
    assert values_due(31, 32) and not values_due(31) and not values_due(30, 32)
    assert values_due(499, 500) and values_due(0, 1)


def test_the_values_sentence_names_the_numbers() -> None:
    text = values_policy()
    assert f"1–{EVERY_STEP_BELOW}" in text and f"{VALUES_EVERY}th" in text and "last" in text


def test_runs_about_what_happens_inside_a_step_record_every_step() -> None:
    from ddp_viz.model.course import load_lesson

    def every(lesson: str) -> bool:
        return values_at_every_step(load_lesson(lesson).scenario().to_dict())

    assert every("accumulate-with-no-sync") and every("uneven-inputs")
    assert not every("buckets") and not every("ddp-pattern")
