"""What a rule is and the registry of rules (model.rules lists them all); the first rule,
that a lesson folder reads at all, is checked by reading it (model.rules.check)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ddp_viz.model.lesson import Lesson


@dataclass(frozen=True)
class Problem:
    lesson: str
    rule: str
    where: str  # "lesson.toml", "question q3", "phase local", "scenario.toml: lr"
    message: str
    fix: str

    def text(self) -> str:
        return f"{self.lesson}: {self.where}: {self.message} [{self.rule}]\n    fix: {self.fix}"


Check = Callable[[Lesson, Sequence[Lesson]], Iterable[Problem]]


@dataclass(frozen=True)
class Rule:
    id: str
    says: str  # the rule in a sentence, for the docs and `ddp-viz check --rules`
    check: Check


RULES: dict[str, Rule] = {}


def rule(rule_id: str, says: str, check: Check) -> Check:
    """Register a rule: defining it beside its function is all it takes to be checked,
    tested and documented. (A call, not a decorator: mutmut leaves decorated functions
    unmutated, and these are what `make mutants` must see.)"""
    RULES[rule_id] = Rule(rule_id, " ".join(says.split()), check)
    return check


def found(lesson: Lesson, rule_id: str, where: str, message: str, fix: str) -> Problem:
    """A problem of ``lesson`` (the rules' shorthand)."""
    return Problem(lesson.id, rule_id, where, message, fix)


def _read(lesson: Lesson, course: Sequence[Lesson]) -> Iterable[Problem]:
    return ()  # a folder that does not read is no Lesson: rules.check reports it


rule(
    "loads",
    """The folder reads: lesson.toml is valid TOML with a title, a known `scene` and `kind`,
    phases its scene has, a scenario file that exists, `terms` as a list of words, and
    well-formed questions (a choice's `answer` indexes one of its choices; a prediction's
    `[question.quantity]` names a quantity the kind records, its parameter where it needs one,
    and a step counted from 1); lesson.md is there.""",
    _read,
)
