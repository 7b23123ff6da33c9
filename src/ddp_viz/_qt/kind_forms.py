"""The window's side of each kind of run: its folder's ``form.py`` (Qt, no torch).

A kind's ``FIELDS`` is a class of form fields: its widgets and their names (``fields()``),
where they go (``add_to(form)``, which sets ``rows``), ``connect(slot)``, whether they apply
to a scenario (``applies``: their rows show), ``load(scenario)``, and ``write(raw)``, which
puts what the fields hold into the raw mapping the form validates (its own table, or the
core's ``[model]`` / ``[ddp]`` keys it edits).
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard

from PySide6.QtWidgets import QFormLayout, QWidget

from ddp_viz._qt.plain_form import PlainFields
from ddp_viz.model import registry
from ddp_viz.model.plain_table import PlainTable
from ddp_viz.model.scenario import Scenario


class KindFields(Protocol):
    rows: tuple[int, ...]

    def fields(self) -> dict[str, QWidget]: ...

    def add_to(self, form: QFormLayout) -> None: ...

    def connect(self, slot: Any) -> None: ...

    def applies(self, scenario: Scenario) -> bool: ...

    def load(self, scenario: Scenario) -> None: ...

    def write(self, raw: dict[str, Any]) -> None: ...


def kind_fields() -> dict[str, KindFields]:
    """A fresh set of every kind's fields, keyed by kind: its ``form.py``'s, or, for a table
    of plain values with keys the form shows, the fields made from the table."""
    forms = registry.load_parts("form")
    out: dict[str, KindFields] = {}
    for kind in registry.kinds():
        cls = getattr(forms.get(kind.id), "FIELDS", None)
        if cls is not None:
            out[kind.id] = cls()
        elif _plain(kind.spec) and kind.spec.shown():
            out[kind.id] = PlainFields(kind.spec)
    return out


def _plain(spec: object) -> TypeGuard[type[PlainTable]]:
    return isinstance(spec, type) and issubclass(spec, PlainTable)
