"""Checking recorded lines against ``ddp-viz schema``, shared by the tests that do."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, ValidationError


class ByEvent:
    """The schema's validator, one line at a time, against the definition its ``event`` names.

    The schema's top level is a ``oneOf`` over every event (some fifty): checked that way, each
    line is tried against all of them, which made this module a two-minute job on the 8-rank
    recordings. Each definition pins its ``event`` by a ``const``, so a line can match no other:
    its own definition says the same as the ``oneOf`` does. The first line of each event seen
    is still checked against the whole schema, so the ``oneOf`` stays covered."""

    def __init__(self, full: dict[str, Any]) -> None:
        Draft202012Validator.check_schema(full)
        self.full = Draft202012Validator(full)
        self.defs = full["$defs"]
        self.by_event: dict[str, Draft202012Validator] = {}

    def iter_errors(self, line: dict[str, Any]) -> list[ValidationError]:
        name = f"event.{line.get('event')}"
        own = self.by_event.get(name)
        if own is None:  # the first of its event (or an unknown one): the whole schema
            if name in self.defs:
                own = self.full.evolve(schema={"$defs": self.defs, "$ref": f"#/$defs/{name}"})
                self.by_event[name] = own
            return list(self.full.iter_errors(line))
        return list(own.iter_errors(line))

    def validate(self, line: dict[str, Any]) -> None:
        errors = self.iter_errors(line)
        if errors:
            raise errors[0]
