"""A kind's scenario table of plain values, declared once (pure).

A table whose keys are whole numbers, numbers and flags is a frozen dataclass deriving from
:class:`PlainTable`, each field made with :func:`knob`: its range, and, when the window's
form shows it, its label and tooltip. Reading the table (every message names the field),
writing it back, the form's fields (``ddp_viz._qt.plain_form``) and the form's names in
messages all come from that declaration; a kind writes only what is its own, such as a check
across keys (:meth:`PlainTable.check`) or what it asks of the whole scenario.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import flag, number, rate, whole

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario


@dataclass(frozen=True)
class Knob:
    """How one key is read and shown. ``low``/``high``: its range (a whole number's, or a
    number's when given); ``rate``: a learning rate, above 0 and at most ``high``; ``unit``: a
    number's unit in words ("seconds"); ``label``: its name in the window's form and in the
    form's messages ("": the form does not show it), ``tip`` its tooltip there."""

    low: float | None = None
    high: float | None = None
    rate: bool = False
    unit: str = ""
    label: str = ""
    tip: str = ""


def knob(default: Any, **how: Any) -> Any:
    """A field of a :class:`PlainTable` with its default and its :class:`Knob`."""
    return field(default=default, metadata={"knob": Knob(**how)})


def knob_of(f: Any) -> Knob:
    return f.metadata.get("knob", Knob())


def read(key: str, value: Any, kind: type, k: Knob) -> Any:
    """One value of the table as its field's type and knob say, or ScenarioError naming
    ``key``."""
    if kind is bool:
        return flag(key, value)
    if kind is int:
        assert k.low is not None and k.high is not None, f"{key}: a whole number needs a range"
        return whole(key, value, int(k.low), int(k.high))
    if k.rate:
        assert k.high is not None, f"{key}: a rate needs its highest value"
        return rate(key, value, k.high)
    found = number(key, value)
    if k.low is not None and k.high is not None and not k.low <= found <= k.high:
        unit = f" {k.unit}" if k.unit else ""
        raise ScenarioError(key, f"must be from {k.low:g} to {k.high:g}{unit}, got {found:g}")
    return found


class PlainTable:
    """Base of a kind's table of plain values (see the module's text). ``TABLE`` is the
    table's name (``[resuming]``); ``trains`` False when the kind's program trains its own
    model, not the core's."""

    TABLE: ClassVar[str]
    trains: ClassVar[bool] = True

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    @classmethod
    def from_mapping(cls, data: Any) -> Any:
        table = spec_table(data, cls.TABLE, cls.keys())
        hints = typing.get_type_hints(cls)
        values = {
            f.name: read(f"{cls.TABLE}.{f.name}", table[f.name], hints[f.name], knob_of(f))
            for f in fields(cls)  # type: ignore[arg-type]
            if f.name in table
        }
        spec = cls(**values)
        spec.check()
        return spec

    def check(self) -> None:
        """Raise ScenarioError for keys that do not go together (each is checked alone)."""

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.keys()}

    def fixed_steps(self, world: int) -> int | None:
        return None

    def check_scenario(self, s: Scenario) -> None:
        """Raise ScenarioError for what the kind cannot run (nothing, unless it says)."""

    @classmethod
    def shown(cls) -> list[tuple[str, type, Knob]]:
        """The keys the form shows, in the table's order: (key, type, knob)."""
        hints = typing.get_type_hints(cls)
        return [
            (f.name, hints[f.name], knob_of(f))
            for f in fields(cls)  # type: ignore[arg-type]
            if knob_of(f).label
        ]

    @classmethod
    def field_names(cls) -> dict[str, str]:
        """The form's name of each key it shows, by ``table.key`` (the messages name it)."""
        return {f"{cls.TABLE}.{key}": k.label for key, _, k in cls.shown()}
