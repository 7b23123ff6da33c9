"""The window's side of each kind of run: its folder's ``form.py`` (Qt, no torch).

A kind with a scenario table gives ``FIELDS``, a class of form fields for that table: its
widgets and their names (``fields()``), where they go (``add_to(form)``, which sets ``rows``),
``connect(slot)``, ``load(table or None)`` and ``table()``, the table as the form has it.
"""

from __future__ import annotations

from typing import Any, Protocol

from PySide6.QtWidgets import QFormLayout, QWidget

from ddp_viz.model import registry


class KindFields(Protocol):
    rows: tuple[int, ...]

    def fields(self) -> dict[str, QWidget]: ...

    def add_to(self, form: QFormLayout) -> None: ...

    def connect(self, slot: Any) -> None: ...

    def load(self, table: Any) -> None: ...

    def table(self) -> dict[str, Any]: ...


def kind_fields() -> dict[str, KindFields]:
    """A fresh set of every kind's fields, keyed by the scenario table they edit."""
    forms = registry.load_parts("form")
    out: dict[str, KindFields] = {}
    for kind in registry.kinds():
        cls = getattr(forms.get(kind.id), "FIELDS", None)
        if cls is not None and kind.table is not None:
            out[kind.table] = cls()
    return out
