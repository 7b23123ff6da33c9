"""Which steps get the single-process reference and which the tensor values, and what the stage
says without them."""

from __future__ import annotations

import re

from ddp_viz.model.course import load_course
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


def test_every_lessons_run_has_the_reference_and_the_values_at_every_step() -> None:
    # Each lesson's own scenario, as its Run button starts it: the stage never has to say
    # "not recorded" or "no reference" in a lesson.
    lessons = list(load_course())
    assert len(lessons) >= 8
    for lesson in lessons:
        if not lesson.trains:  # a kind's own program: no core reference or values to show
            continue
        steps = lesson.scenario().steps
        assert steps >= 1
        missing = [s + 1 for s in range(steps) if not reference_due(s)]
        assert not missing, f"{lesson.id}: no reference at steps {missing}"
        missing = [s + 1 for s in range(steps) if not values_due(s, steps)]
        assert not missing, f"{lesson.id}: no values at steps {missing}"


def test_a_long_run_has_it_at_every_nth_step_counted_from_one() -> None:
    due = [s + 1 for s in range(200) if reference_due(s)]
    later = [k for k in range(THEN_EVERY, 201, THEN_EVERY) if k > EVERY_STEP_BELOW]
    assert due == list(range(1, EVERY_STEP_BELOW + 1)) + later


def test_nearest_reference_step_is_earlier_and_has_one() -> None:
    for s in range(300):
        n = nearest_reference_step(s)
        assert n <= s and reference_due(n)
        assert not any(reference_due(k) for k in range(n + 1, s + 1))


def test_the_policy_sentence_says_which_steps_have_the_reference() -> None:
    # The steps the sentence names (1-based) are the steps reference_due picks.
    m = re.search(
        r"steps 1–(\d+) and then for every (\d+)th step \((\d+), (\d+), …\)", reference_policy()
    )
    assert m, reference_policy()
    first, every, example1, example2 = map(int, m.groups())
    said = [k for k in range(1, 1001) if k <= first or k % every == 0]
    assert said == [s + 1 for s in range(1000) if reference_due(s)]
    assert [example1, example2] == [k for k in said if k > first][:2]


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


def test_the_values_sentence_says_which_steps_have_values() -> None:
    # The steps the sentence names (1-based) are the steps values_due picks, at run lengths
    # that do and do not end on one of them.
    m = re.search(r"recorded for steps 1–(\d+), every (\d+)th step and the last;", values_policy())
    assert m, values_policy()
    first, every = map(int, m.groups())
    for steps in (1, 5, first, first + 1, 2 * every + 3, 10 * every, 500, 1001):
        said = [k for k in range(1, steps + 1) if k <= first or k % every == 0 or k == steps]
        assert said == [s + 1 for s in range(steps) if values_due(s, steps)], steps


def test_runs_about_what_happens_inside_a_step_record_every_step() -> None:
    from ddp_viz.model.course import load_lesson

    def every(lesson: str) -> bool:
        return values_at_every_step(load_lesson(lesson).scenario().to_dict())

    assert every("accumulate-with-no-sync") and every("uneven-inputs")
    assert not every("buckets") and not every("ddp-pattern")
