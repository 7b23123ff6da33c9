"""Every rule a lesson must meet, in one place (pure): ``ddp-viz check`` runs them on a
lecturer's lesson folders or the whole course, the tests run the same ones on the course, and
docs/lessons.md lists them from here (``ddp-viz check --rules``), so the three cannot drift.

A rule is a function registered with :func:`rule`: it gets one lesson and the course it sits in
(every lesson, in order) and yields a :class:`Problem` for each thing wrong, naming the lesson,
where in it (a question, a phase, a field of the scenario), what is wrong and how to fix it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.lesson import Lesson

# defining a rule registers it: the rules' modules, in the order the docs list them
from ddp_viz.model.rules import files, in_course, listing  # noqa: F401
from ddp_viz.model.rules.base import RULES, Problem, Rule, found, rule

__all__ = ["RULES", "Problem", "Rule", "found", "problems", "rule", "rules_markdown"]


def problems(lesson: Lesson, course: Sequence[Lesson]) -> list[Problem]:
    """Everything wrong with ``lesson`` as a lesson of ``course`` (which holds it)."""
    try:
        lesson.scenario()
        probe = lesson
    except ScenarioError:
        # the `scenario` rule names what is wrong with it; the other rules read the listing
        # with the default scenario's values, so that every mistake shows in one check
        probe = dataclasses.replace(lesson, scenario_file=None)
    out: list[Problem] = []
    for r in RULES.values():
        out += r.check(lesson if r.id == "scenario" else probe, course)
    return out


def rules_markdown() -> str:
    """The rules as docs/lessons.md lists them (generated: ``ddp-viz check --rules``)."""
    lines = [f"- **`{r.id}`**: {r.says}" for r in RULES.values()]
    return "\n".join(lines) + "\n"
